"""``zluda-run warmup``: run the workload once to fill ZLUDA's compile cache, with a heartbeat.

ZLUDA compiles every PTX module to AMD code on first use; a big model's first run can
spend minutes there with no output.  The heartbeat (elapsed time, cache growth so far)
shows it is working, and the report says how much the cache grew.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .compile_cache import compile_cache_dirs, inspect_compile_cache
from .errors import CommandNotFoundError, HostError, LaunchError
from .serial import JsonMixin

HEARTBEAT_S = 10.0


@dataclass
class WarmupReport(JsonMixin):
    argv: list[str]
    exit_code: int
    elapsed_s: float
    cache_dirs: list[Path] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0
    files_before: int = 0
    files_after: int = 0
    heartbeats: int = 0

    @property
    def grew_bytes(self) -> int:
        return self.bytes_after - self.bytes_before

    @property
    def grew_files(self) -> int:
        return self.files_after - self.files_before

    def to_dict(self) -> dict:
        data = super().to_dict()
        data.update(grew_bytes=self.grew_bytes, grew_files=self.grew_files)
        return data


Heartbeat = Callable[[float, int], None]  # (elapsed seconds, cache bytes now)


def warmup(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    cache_dirs: Sequence[Path] | None = None,
    *,
    heartbeat_s: float = HEARTBEAT_S,
    on_heartbeat: Heartbeat | None = None,
    cwd: Path | None = None,
    stdout: IO[bytes] | int | None = None,
) -> WarmupReport:
    """Run ``argv`` once (as given), measuring time and compile-cache growth."""
    if not argv:
        raise HostError("no workload command given", hint="zluda-run warmup -- python infer.py")
    if heartbeat_s <= 0:
        raise HostError(f"heartbeat interval must be positive (got {heartbeat_s})", hint="use e.g. 10")
    dirs = list(cache_dirs) if cache_dirs is not None else compile_cache_dirs()
    before = inspect_compile_cache(dirs)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv), env=dict(env) if env is not None else None, cwd=cwd, stdout=stdout
        )
    except FileNotFoundError:
        raise CommandNotFoundError(
            f"command not found: {argv[0]}", hint="check the command after --"
        ) from None
    except OSError as exc:
        raise LaunchError(
            f"cannot start {argv[0]}: {exc.strerror or exc}", hint="check the command"
        ) from None
    beats = 0
    try:
        while True:
            try:
                code = proc.wait(timeout=heartbeat_s)
                break
            except subprocess.TimeoutExpired:
                beats += 1
                if on_heartbeat is not None:
                    on_heartbeat(time.monotonic() - start, inspect_compile_cache(dirs).total_bytes)
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        raise
    elapsed = time.monotonic() - start
    after = inspect_compile_cache(dirs)
    return WarmupReport(
        argv=list(argv),
        exit_code=code,
        elapsed_s=elapsed,
        cache_dirs=dirs,
        bytes_before=before.total_bytes,
        bytes_after=after.total_bytes,
        files_before=before.file_count,
        files_after=after.file_count,
        heartbeats=beats,
    )
