"""``zluda-run warmup``: run the workload once to fill ZLUDA's compile cache, with a heartbeat.

ZLUDA compiles every PTX module to AMD code on first use; a big model's first run can
spend minutes there with no output.  The heartbeat (elapsed time, cache growth so far)
shows it is working, and the report says how much the cache grew.

``zluda-run warmup`` prepares the run itself (release, plan: their errors are zluda-run's
own, never blamed on the workload) and hands :func:`warmup` the workload's argv, environment and
plan. :func:`zluda_run_argv` is how ``zluda-run ab`` runs its side A.

Where the release ships its own precompiler (upstream v6+: ``zluda_precompile``, ``.exe`` on
Windows), :func:`warmup` runs that instead of the workload: it scans a folder or file for CUDA
binaries (``.nv_fatbin`` / ``.nv_fatb`` sections), compiles every GPU module through the
release's driver library next to it (it loads ``libcuda.so`` / ``nvcuda.dll`` from its own folder)
on all CPU threads, and fills the same cache. Its command line is ``zluda_precompile
[--device N] [--follow-links] PATH`` (vosen/ZLUDA ``zluda_precompile/src/main.rs``@8a7931be,
``Arguments``; ``docs/src/precompiling.md``): PATH is torch's ``lib`` folder for a torch
workload, the program itself for a binary. When it fails, the workload runs as before.
``clear_caches`` first removes stale ZLUDA and MIOpen caches
(:func:`~zluda_runner.host.compile_cache.clear_caches`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from zluda_runner.core.errors import CommandNotFoundError, HostError, LaunchError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.settings import Settings
from zluda_runner.core.version import JSON_SCHEMA_VERSION
from zluda_runner.host.compile_cache import (
    ClearedCaches,
    clear_caches,
    compile_cache_dirs,
    inspect_compile_cache,
)

if TYPE_CHECKING:
    from zluda_runner.plan.model import ShimPlan

HEARTBEAT_S = 10.0
PRECOMPILE_NAMES = {"linux": "zluda_precompile", "windows": "zluda_precompile.exe"}
METHOD_WORKLOAD = "workload"
METHOD_PRECOMPILE = "zluda_precompile"
METHOD_FALLBACK = "workload (zluda_precompile failed)"


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
    method: str = METHOD_WORKLOAD  # or the release's zluda_precompile (METHOD_PRECOMPILE / METHOD_FALLBACK)
    precompile_argv: list[str] = field(default_factory=list)
    precompile_exit: int | None = None
    cleared: ClearedCaches | None = None  # what --clear-caches removed first
    schema: int = JSON_SCHEMA_VERSION

    @property
    def grew_bytes(self) -> int:
        return self.bytes_after - self.bytes_before

    @property
    def grew_files(self) -> int:
        return self.files_after - self.files_before

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(grew_bytes=self.grew_bytes, grew_files=self.grew_files)
        return data


Heartbeat = Callable[[float, int, int], None]  # (elapsed seconds, cache bytes now, bytes grown so far)


def zluda_run_argv(command: Sequence[str], settings: Settings | None = None) -> list[str]:
    """``<this python> -m zluda_runner [global options] run -- COMMAND``: COMMAND under ZLUDA.

    The global options the user gave this zluda-run (``--zluda-dir``, ``--release``,
    ``--manifest``, ``--cache-dir``, ``--python``, ``--force``; a
    :class:`~zluda_runner.core.settings.Settings`) are handed on, so the child picks the same release.
    """
    argv = [sys.executable, "-m", "zluda_runner"]
    if settings is not None:
        for option, value in (
            ("--zluda-dir", settings.zluda_dir),
            ("--release", settings.release),
            ("--manifest", settings.manifest),
            ("--cache-dir", settings.cache_dir),
            ("--python", settings.python),
        ):
            if value:
                argv += [option, str(value)]
        if settings.force:
            argv.append("--force")
    return [*argv, "run", "--", *command]


@dataclass(frozen=True)
class _Watched:
    """How :func:`warmup` runs each command: environment, cache folders measured, heartbeat, cwd, stdout."""

    env: Mapping[str, str]
    dirs: Sequence[Path]
    heartbeat_s: float
    on_heartbeat: Heartbeat | None
    cwd: Path | None
    stdout: IO[bytes] | int | None


def _run_once(argv: Sequence[str], how: _Watched) -> tuple[WarmupReport, int | None]:
    """Run ``argv`` once (as given), measuring time and compile-cache growth; and the signal sent to us
    (and passed on) while it ran, None when nobody stopped it from outside. How it runs, its signals and
    its tree are :func:`zluda_runner.core.child.run_tree`'s (the workload has its grace to end when a
    heartbeat callback fails or a signal comes, then its whole tree is killed)."""
    from zluda_runner.core.child import run_tree
    from zluda_runner.launch.process import resolve_command

    dirs = list(how.dirs)
    before = inspect_compile_cache(dirs)
    run_env = dict(how.env)
    executable = resolve_command(str(argv[0]), run_env)  # 127/126 as `run` says them; PATHEXT on Windows
    beats = 0

    def beat(elapsed: float) -> None:
        nonlocal beats
        beats += 1
        if how.on_heartbeat is not None:
            now = inspect_compile_cache(dirs).total_bytes
            how.on_heartbeat(elapsed, now, now - before.total_bytes)

    start = time.monotonic()
    try:
        ended = run_tree(list(argv), executable=executable, env=run_env, cwd=how.cwd, stdout=how.stdout,
                         tick=beat, tick_s=how.heartbeat_s, shares_console=sys.platform == "win32")
    except FileNotFoundError:
        raise CommandNotFoundError(f"command not found: {argv[0]}",
                                   hint="check the command after --") from None
    except OSError as exc:
        raise LaunchError(f"cannot start {argv[0]}: {exc.strerror or exc}",
                          hint="check the command") from None
    elapsed = time.monotonic() - start
    after = inspect_compile_cache(dirs)
    report = WarmupReport(
        argv=list(argv),
        exit_code=ended.exit_code,
        elapsed_s=elapsed,
        cache_dirs=dirs,
        bytes_before=before.total_bytes,
        bytes_after=after.total_bytes,
        files_before=before.file_count,
        files_after=after.file_count,
        heartbeats=beats,
    )
    return report, ended.stopped_by


@dataclass(frozen=True)
class PrecompileJob(JsonMixin):
    """The release's own precompiler and the one path it scans for this workload."""

    tool: Path
    input: str

    @property
    def argv(self) -> list[str]:
        return [str(self.tool), self.input]


def precompile_tool(plan: ShimPlan) -> Path | None:
    """The release's ``zluda_precompile`` beside its driver library (where it loads it from), else in the
    release folder: a regular file (never a link), executable on POSIX; None when the release ships none."""
    name = PRECOMPILE_NAMES.get(plan.os)
    if name is None:
        return None
    folders = [Path(b.shim).parent for b in plan.bindings if b.family == "driver" and b.shim]
    if plan.release is not None:
        folders.append(Path(plan.release.root))
    for folder in dict.fromkeys(folders):
        candidate = folder / name
        try:
            if candidate.is_symlink() or not candidate.is_file():
                continue
        except OSError:
            continue
        if plan.os == "windows" or os.access(candidate, os.X_OK):
            return candidate
    return None


def precompile_job(plan: ShimPlan) -> PrecompileJob | None:
    """What to precompile for ``plan``'s target: torch's ``lib`` folder, else the program; None when the
    release has no precompiler or the target has no CUDA binaries to scan."""
    tool = precompile_tool(plan)
    if tool is None:
        return None
    target = plan.target
    if target.torch_path and Path(target.torch_path, "lib").is_dir():
        return PrecompileJob(tool, str(Path(target.torch_path, "lib")))
    if target.binary and Path(target.binary).is_file():
        return PrecompileJob(tool, target.binary)
    return None


def warmup(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    cache_dirs: Sequence[Path] | None = None,
    *,
    heartbeat_s: float = HEARTBEAT_S,
    on_heartbeat: Heartbeat | None = None,
    cwd: Path | None = None,
    stdout: IO[bytes] | int | None = None,
    plan: ShimPlan | None = None,
    precompile: bool = True,
    clear: bool = False,
    home: Path | None = None,
) -> WarmupReport:
    """Run ``argv`` once (as given), measuring time and compile-cache growth.

    With the launch's ``plan``: where its release ships ``zluda_precompile`` (and ``precompile``), that
    runs instead on the target's CUDA binaries, and ``argv`` only when it fails. ``clear``: first remove
    ZLUDA's and MIOpen's caches (``home``: whose; default this user's), listed in ``report.cleared``."""
    if not argv:
        raise HostError("no workload command given", hint="{cmd:warmup -- python infer.py}")
    if not math.isfinite(heartbeat_s) or heartbeat_s <= 0:  # nan passed `<= 0`: no heartbeat, silently
        raise HostError(f"heartbeat interval must be a positive number of seconds (got {heartbeat_s})",
                        hint="use e.g. 10")
    how = _Watched(dict(env) if env is not None else dict(os.environ),
                   list(cache_dirs) if cache_dirs is not None else compile_cache_dirs(),
                   heartbeat_s, on_heartbeat, cwd, stdout)
    cleared = clear_caches(env=env, home=home) if clear else None
    job = precompile_job(plan) if precompile and plan is not None else None

    if job is None:
        return dataclasses.replace(_run_once(argv, how)[0], cleared=cleared)
    pre, stopped = _run_once(job.argv, how)
    # stopped from outside (a `kill` of zluda-run, passed on to the precompiler): the warmup ends there;
    # the workload ran next as the fallback and the kill was as good as ignored
    if pre.exit_code == 0 or stopped is not None:
        return dataclasses.replace(pre, method=METHOD_PRECOMPILE, precompile_argv=list(job.argv),
                                   precompile_exit=pre.exit_code, cleared=cleared)
    after, _ = _run_once(argv, how)
    return dataclasses.replace(after, method=METHOD_FALLBACK, precompile_argv=list(job.argv),
                               precompile_exit=pre.exit_code, elapsed_s=pre.elapsed_s + after.elapsed_s,
                               bytes_before=pre.bytes_before, files_before=pre.files_before,
                               heartbeats=pre.heartbeats + after.heartbeats, cleared=cleared)


def stderr_fd() -> int | None:
    """Our stderr's file descriptor (the workload's stdout with ``--json``), or None when it has none."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
