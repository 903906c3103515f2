"""A tiny workload for the verdict's tests: the standard library and ``zluda_runner.ab`` only.

usage: workload.py [--gpu DEVICE_DIR] [--leak BYTES] [--fail] [--driver]

It records "values" (a list), "count" and times "work".  The side under test is every run but the
CPU reference (``CUDA_VISIBLE_DEVICES=""``).  On that side only:
- ``POC_PLANT=1`` in the environment adds 0.25 to one recorded value (a planted wrong output);
- ``--gpu DEVICE_DIR`` "uses the GPU" of a fake amdgpu sysfs tree: it writes busy 60% and 512 MiB
  more VRAM, holds them until the sampler has read the busy file twice after the write (inotify,
  IN_CLOSE_NOWRITE: the second read began after the first ended, so after the write), then
  writes busy 0 and VRAM back to where it was, plus ``--leak`` bytes (VRAM growing run after run);
- ``--fail`` exits 5 after recording;
- ``--driver`` (Windows) loads ``nvcuda.dll`` by name and asks its version: ZLUDA's, under the plan.
It prints, last, the release it runs under (``ZLUDA_RUNNER_RELEASE``) or "as given".
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import select
import struct
import sys
from pathlib import Path

from zluda_runner import ab

IN_CLOSE_NOWRITE = 0x10
WAIT_LIMIT_S = 120.0  # a bound, not a timing: a sampler that never reads fails the test
MIB = 1024 * 1024


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="ascii")
    os.replace(tmp, path)


def wait_for_reads(path: Path, count: int) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, str(path).encode(), IN_CLOSE_NOWRITE) < 0:
        raise SystemExit(f"inotify: {os.strerror(ctypes.get_errno())}")
    seen = 0
    while seen < count:
        ready, _, _ = select.select([fd], [], [], WAIT_LIMIT_S)
        if not ready:
            raise SystemExit(f"the sampler did not read {path}")
        data = os.read(fd, 4096)
        offset = 0
        while offset < len(data):
            _wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
            offset += 16 + length
            seen += bool(mask & IN_CLOSE_NOWRITE)
    os.close(fd)


def use_gpu(device: Path, leak: int) -> None:
    before = int((device / "mem_info_vram_used").read_text())
    write_atomic(device / "mem_info_vram_used", f"{before + 512 * MIB}\n")
    write_atomic(device / "gpu_busy_percent", "60\n")
    wait_for_reads(device / "gpu_busy_percent", 2)
    write_atomic(device / "gpu_busy_percent", "0\n")
    write_atomic(device / "mem_info_vram_used", f"{before + leak}\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=Path)
    parser.add_argument("--leak", type=int, default=0)
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--driver", action="store_true")
    args = parser.parse_args()
    under_test = os.environ.get("CUDA_VISIBLE_DEVICES") != ""
    values = [1.0, 2.0, -3.0, 4.0, 0.5, 6.0]
    with ab.timer("work"):
        if args.gpu is not None and under_test:
            use_gpu(args.gpu, args.leak)
        total = sum(v * v for v in values)
    if under_test and os.environ.get("POC_PLANT") == "1":
        values[3] += 0.25
    ab.record("values", values)
    ab.record("count", len(values))
    ab.record("total", total)
    if args.driver and under_test:
        version = ctypes.c_int(0)
        found = ctypes.WinDLL("nvcuda.dll").cuDriverGetVersion(ctypes.byref(version))  # type: ignore[attr-defined]
        print(f"cuDriverGetVersion -> {found}", flush=True)
    print(f"total {total}")
    print(f"release {os.environ.get('ZLUDA_RUNNER_RELEASE', 'as given')}")
    return 5 if args.fail and under_test else 0


if __name__ == "__main__":
    sys.exit(main())
