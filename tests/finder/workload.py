"""The workload of find's tests: the standard library and ``zluda_runner.ab`` only.

usage: workload.py [--gpu DEVICE_DIR]

On the side under test (every run but the CPU reference, ``CUDA_VISIBLE_DEVICES=""``) it loads
``libcuda.so.1`` by name -- the stand-in release's driver, as the plan binds it -- and asks its version:
a driver built to answer 13001 plants an offset of 0.5 in one recorded value (it "computes wrong");
13002 does too unless the start-up defaults (``ZLUDA_RUNNER_TORCH_DEFAULTS``, what zluda-run's start-up
code applies) name ``cudnn-off`` (it "works only with cuDNN off"), 13004 unless they name
``pinned-memory-off`` (it "works only with pinned memory off"); 13003 makes it send SIGINT to the
process that started it (Ctrl-C during a search) and wait to be stopped. A driver that aborts when loaded
ends the run with SIGABRT. ``--gpu``: it uses the GPU of a fake amdgpu sysfs tree (tests/poc/workload.py).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.poc.workload import WAIT_LIMIT_S, use_gpu
from zluda_runner import ab


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=Path)
    args = parser.parse_args()
    under_test = os.environ.get("CUDA_VISIBLE_DEVICES") != ""
    values = [1.0, 2.0, -3.0, 4.0]
    with ab.timer("work"):
        if under_test:
            version = ctypes.c_int(0)
            ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(version))
            offset = version.value - 13000
            startup = os.environ.get("ZLUDA_RUNNER_TORCH_DEFAULTS", "").split(",")
            cudnn_off, pinned_off = "cudnn-off" in startup, "pinned-memory-off" in startup
            values[1] += 0.5 * bool(offset == 1 or (offset == 2 and not cudnn_off)
                                    or (offset == 4 and not pinned_off))
            if offset == 3:
                os.kill(os.getppid(), signal.SIGINT)
                time.sleep(WAIT_LIMIT_S)  # a bound, not a timing: the search stops this run first
            if args.gpu is not None:
                use_gpu(args.gpu, 0)
    ab.record("values", values)
    print("values", values)
    return 0


if __name__ == "__main__":
    sys.exit(main())
