"""Run a command with every driver call traced, and read the trace back as one report.

When the ZLUDA release ships its own tracer (``<zluda_dir>/trace/libcuda.so(.1)``), that
tracer is put first and its logs (``ZLUDA_LOG_DIR``) are parsed; otherwise our interposer
(``shims/trace``) is put first, forwarding to ``real_libcuda``. Either way the result is a
:class:`TraceReport` listing each process and the merged calls.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.core.errors import CommandNotExecutableError, TraceError
from zluda_runner.core.paths import default_cache_dir
from zluda_runner.core.proctree import ended_by
from zluda_runner.trace.counts import read_count_dir
from zluda_runner.trace.interposer import build_interposer, interposer_env
from zluda_runner.trace.model import SOURCE_INTERPOSER, SOURCE_ZLUDA_LOG, TraceReport, merge_processes
from zluda_runner.trace.zluda_log import read_log_dir

ZLUDA_LOG_DIR_ENV = "ZLUDA_LOG_DIR"
ZLUDA_CUDA_LIB_ENV = "ZLUDA_CUDA_LIB"
TRACER_NAMES = ("libcuda.so.1", "libcuda.so")
NO_PROCESS_WARNING = (
    "no process reported: the workload loaded no libcuda.so.1 through the tracer (it made no CUDA "
    "call, or bound another libcuda); check with LD_DEBUG=libs"
)


def find_zluda_tracer(zluda_dir: Path | None) -> Path | None:
    """The release's own tracer library (vosen/ZLUDA rewrite ``trace/``), if it ships one."""
    if zluda_dir is None:
        return None
    for name in TRACER_NAMES:
        cand = Path(zluda_dir) / "trace" / name
        if cand.is_file():
            return cand
    return None


def _tracer_folder(tracer: Path, run_dir: Path) -> Path:
    """A folder where the tracer answers to ``libcuda.so.1``, the name cudart dlopens.

    A ``trace/`` that holds only ``libcuda.so`` gets a one-link folder in the run's own directory.
    """
    if tracer.name == "libcuda.so.1":
        return tracer.parent
    links = run_dir / "tracer-links"
    links.mkdir()
    (links / "libcuda.so.1").symlink_to(tracer.resolve())
    return links


def _prepend_path(env: dict[str, str], key: str, folder: Path) -> None:
    old = env.get(key, "")
    env[key] = f"{folder}:{old}" if old else str(folder)


def _run(argv: Sequence[str], env: Mapping[str, str],
         timeout: float | None) -> tuple[int | None, str | None]:
    """The command's exit status (signal N -> 128+N; None when it ran past ``timeout``) and what killed it
    (``SIGSEGV``, by :func:`zluda_runner.core.proctree.ended_by`; None when it exited). It runs as every
    workload does (:func:`zluda_runner.core.child.run_tree`): signals passed on, so it can end through its
    exit handlers and still write its counts; its whole tree killed at the timeout and when it ends."""
    from zluda_runner.core.child import run_tree
    from zluda_runner.launch.process import resolve_command

    args = list(argv)
    executable = resolve_command(args[0], env)  # 127/126 as `run` says them (was a PermissionError)
    try:
        ended = run_tree(args, executable=executable, env=env, timeout=timeout, grace=None,
                         shares_console=sys.platform == "win32")
    except OSError as exc:
        raise CommandNotExecutableError(f"cannot run {args[0]}: {exc.strerror or exc}",
                                        hint="check its #! line, or give its interpreter first") from None
    if ended.timed_out:
        return None, None
    return ended.exit_code, ended_by(ended.returncode)


def run_traced(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    real_libcuda: Path,
    out_dir: Path,
    zluda_dir: Path | None = None,
    cache_dir: Path | None = None,
    timeout: float | None = None,
) -> TraceReport:
    """Run ``argv`` under ``env`` with driver calls traced; raw logs stay in a fresh folder under ``out_dir``.

    ``real_libcuda`` is the driver the calls go to (ZLUDA's ``libcuda.so.1``, or NVIDIA's).
    The command's exit code is in ``report.exit_code`` (``None`` when it ran past ``timeout``), the signal
    that killed it in ``report.ended_by``.
    """
    if not argv:
        raise TraceError("nothing to trace: no command given", hint="{cmd:--trace -- python infer.py}")
    real = Path(real_libcuda)
    if not real.is_file():
        raise TraceError(
            f"the driver to trace, {real}, does not exist",
            hint="pass the libcuda.so.1 the workload should reach (ZLUDA's or NVIDIA's)",
        )
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="trace-", dir=out_dir))
    run_env = dict(env)
    tracer = find_zluda_tracer(zluda_dir)
    if tracer is not None:
        log_dir = run_dir / "zluda-log"
        log_dir.mkdir()
        _prepend_path(run_env, "LD_LIBRARY_PATH", _tracer_folder(tracer, run_dir))
        run_env[ZLUDA_LOG_DIR_ENV] = str(log_dir)
        run_env[ZLUDA_CUDA_LIB_ENV] = str(real.resolve())
        exit_code, ended = _run(argv, run_env, timeout)
        processes = read_log_dir(log_dir)
        source = SOURCE_ZLUDA_LOG
    else:
        interposer = build_interposer(cache_dir or default_cache_dir())
        counts_dir = run_dir / "interposer"
        counts_dir.mkdir()
        exit_code, ended = _run(argv, interposer_env(interposer, real, counts_dir, run_env), timeout)
        processes = read_count_dir(counts_dir)
        source = SOURCE_INTERPOSER
    warnings = [] if processes else [NO_PROCESS_WARNING]
    if exit_code is None:
        warnings.append(f"the command ran past {timeout} s and was stopped")
    return merge_processes(
        processes, source=source, command=list(argv), exit_code=exit_code, warnings=warnings, ended_by=ended
    )


def read_trace_dir(folder: Path) -> TraceReport:
    """A report from a folder of raw logs left by an earlier run (either source)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TraceError(f"{folder} is not a folder", hint="pass the folder holding the raw trace files")
    counts = read_count_dir(folder) + read_count_dir(folder / "interposer")
    logs = read_log_dir(folder) + read_log_dir(folder / "zluda-log") if not counts else []
    processes = counts or logs
    source = SOURCE_INTERPOSER if counts else SOURCE_ZLUDA_LOG
    return merge_processes(processes, source=source, warnings=[] if processes else [NO_PROCESS_WARNING])


def env_without_tracing(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` minus our tracer's variables (for children that must not be traced)."""
    from zluda_runner.trace.interposer import TRACE_DIR_ENV, TRACE_REAL_ENV

    return {k: v for k, v in env.items() if k not in (TRACE_DIR_ENV, TRACE_REAL_ENV)}


__all__ = ["env_without_tracing", "find_zluda_tracer", "read_trace_dir", "run_traced"]


MAX_REPORT_BYTES = 256 << 20


def load_trace(path: Path) -> TraceReport:
    """A saved TraceReport (the JSON ``--trace-out`` wrote) or a folder of raw trace logs."""
    path = Path(path)
    if path.is_dir():
        report = read_trace_dir(path)
        if not report.processes:
            raise TraceError(f"{path} holds no trace: no ZLUDA tracer log folders and no count files",
                             hint="pass the folder a traced run left (its report names it), or the JSON "
                             "file {opt:trace_out} wrote")
        return report
    try:
        if not path.is_file():
            raise TraceError(f"{path} is not a trace report file or folder",
                             hint="pass the file written by {opt:trace_out}, or the raw trace folder")
        if path.stat().st_size > MAX_REPORT_BYTES:
            raise TraceError(f"{path} is larger than any trace report ({path.stat().st_size} bytes)",
                             hint="pass the file written by {opt:trace_out}")
        return TraceReport.from_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise TraceError(f"{path} does not exist",
                         hint="pass a trace JSON file or a raw trace folder") from exc
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        raise TraceError(f"{path} is not a trace report: {exc}",
                         hint="pass the file written by {opt:trace_out}, or the raw trace folder") from exc
