"""A workload that "uses the GPU": it writes a known sequence of busy/VRAM/power values into a fake
amdgpu sysfs tree, each file replaced whole (rename), and holds each step until the sampler has
certainly read it: after the step is written it notes the count of readings the sampler finished
(``READS``, written by the test's source after each reading) and waits for two more; the second
began after the first ended, so after the step was in place.

usage: gpu_updater.py DEVICE_DIR HWMON_DIR READS_FILE PID_FILE STEPS_JSON
(STEPS_JSON: a list of [busy_percent, vram_used_bytes, power_microwatts]).  Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

WAIT_LIMIT_S = 120.0  # a bound, not a timing: a sampler that never reads fails the test (exit 3)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="ascii")
    os.replace(tmp, path)


def reads(path: Path) -> int:
    try:
        return int(path.read_text(encoding="ascii") or 0)
    except (OSError, ValueError):
        return 0


def main(argv: list[str]) -> int:
    device, hwmon, reads_file, pid_file = (Path(a) for a in argv[:4])
    steps = json.loads(argv[4])
    pid_file.write_text(str(os.getpid()), encoding="ascii")
    for busy, vram, power in steps:
        write_atomic(device / "gpu_busy_percent", f"{busy}\n")
        write_atomic(device / "mem_info_vram_used", f"{vram}\n")
        write_atomic(hwmon / "power1_average", f"{power}\n")
        wanted = reads(reads_file) + 2
        deadline = time.monotonic() + WAIT_LIMIT_S
        while reads(reads_file) < wanted:
            if time.monotonic() > deadline:
                print(f"the sampler did not read step {busy}/{vram}/{power}", file=sys.stderr)
                return 3
            time.sleep(0.002)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
