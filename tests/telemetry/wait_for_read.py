"""A CPU-only workload that runs until the sampler has read the GPU at least once while it ran:
it watches a fake sysfs file with inotify (Linux) and waits for ``COUNT`` reads of it to finish
(IN_CLOSE_NOWRITE) after the watch was set, so its run holds samples without depending on timing.

usage: wait_for_read.py FILE COUNT EXIT_CODE.  Standard library only (inotify through ctypes).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
import sys

IN_CLOSE_NOWRITE = 0x10
WAIT_LIMIT_S = 120.0  # a bound, not a timing: a sampler that never reads fails the test (exit 3)


def main(argv: list[str]) -> int:
    path, count, code = argv[0], int(argv[1]), int(argv[2])
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, path.encode(), IN_CLOSE_NOWRITE) < 0:
        print(f"inotify: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 4
    seen = 0
    sum(i * i for i in range(100_000))  # some CPU work, no GPU
    while seen < count:
        ready, _, _ = select.select([fd], [], [], WAIT_LIMIT_S)
        if not ready:
            print(f"the sampler did not read {path}", file=sys.stderr)
            return 3
        data = os.read(fd, 4096)
        offset = 0
        while offset < len(data):
            _wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
            offset += 16 + length
            seen += bool(mask & IN_CLOSE_NOWRITE)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
