"""Prove with the loader's own log which file every planned binding took.

(On Windows the evidence is the process's own module list at exit:
:mod:`zluda_runner.launch.windows.verify`; the verdicts below are the same.)

The command runs with ``LD_DEBUG=libs,files`` and ``LD_DEBUG_OUTPUT=<tmp>/ld``;
glibc writes one log per program started (``ld.<pid>``); a forked worker writes
into its parent's file under its own pid, and is read as its own process.
``libs`` shows each search (``find library=``, ``trying file=``); ``files``
adds ``file=NAME [ns];  generating link map``, which confirms which attempt was
mapped, and shows objects opened by path. An LD_AUDIT redirect (ours, or
ZLUDA's ``zluda_ld``) changes the name before any search, so no search is
logged for it: the object appears as ``file=/abs/path [ns];  generating link
map`` under the redirected path. Logs written with ``libs`` alone are handled
too: a search's last attempt counts when ``calling init:`` shows that file.

The logs are read by ``zluda_runner.loader.ldlog`` (the parser ``zluda_runner.loader.glibc``
uses too); this module turns them into evidence per planned binding.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from zluda_runner.core.errors import LaunchError
from zluda_runner.core.paths import real_path
from zluda_runner.launch.process import ProcessEnd, run_process_end
from zluda_runner.launch.verdict import BindingEvidence, VerifyResult
from zluda_runner.loader.ldlog import LOG_PREFIX, LoaderLog, read_ld_debug_logs
from zluda_runner.plan.model import ShimPlan

LD_DEBUG_VALUE = "libs,files"


#: what ld.so (and a failing dlopen) prints when a process dies loading its libraries
_LOADER_FAILURES = re.compile(
    r"(Inconsistency detected by ld\.so:.*"
    r"|.*error while loading shared libraries:.*"
    r"|.*cannot open shared object file.*"
    r"|.*version `[^']*' not found.*"
    r"|.*undefined symbol: .*"
    r"|.*symbol lookup error: .*"
    r"|.*cannot be preloaded.*)"
)
_STDERR_KEPT = 256 * 1024
# the reader of the workload's output went away (`| head`): ld.so never raises it, the user's pipe did
_SIGPIPE = getattr(signal, "SIGPIPE", None)


_PRELOAD_IGNORED = re.compile(r"object '(?P<obj>[^']*)' from LD_PRELOAD cannot be preloaded .*: ignored\.?$")


def loader_errors_in(stderr: str) -> list[str]:
    """ld.so's failure lines in a run's stderr (deduplicated, in order)."""
    found = [m.group(0).strip() for m in _LOADER_FAILURES.finditer(stderr)]
    return list(dict.fromkeys(found))


def split_loader_lines(lines: Sequence[str], expected: Mapping[str, Path]) -> tuple[list[str], list[str]]:
    """ld.so's lines as (failures, warnings): an LD_PRELOAD entry it could not load and *ignored* is a
    failure only when it is one of the planned libraries (by name or file); the user's own (a
    ``libtcmalloc.so`` preloaded from a shell profile, not installed) does not stop the run loading."""
    ours = set(expected) | {_real(p) for p in expected.values()}
    errors, warnings = [], []
    for line in lines:
        ignored = _PRELOAD_IGNORED.search(line)
        obj = ignored.group("obj") if ignored else None
        if obj is not None and os.path.basename(obj) not in ours and _real(obj) not in ours:
            warnings.append(line)
        else:
            errors.append(line)
    return errors, warnings


def _real(path: str | Path) -> str:
    return real_path(path)


def evidence_for(logs: Iterable[LoaderLog], expected: Mapping[str, Path]) -> list[BindingEvidence]:
    """For each ``name -> expected file``: did the loader map that file, and nothing else for that name?"""
    logs = list(logs)
    result = []
    for name, want in expected.items():
        want_real = _real(want)
        lines: list[str] = []
        pids: list[int] = []
        wrong: list[str] = []
        for log in logs:
            lines.extend(log.requests.get(name, []))
            for event in log.events:
                by_name = os.path.basename(event.request) == name and "/" not in event.request
                is_expected = _real(event.file) == want_real
                redirected = "/" in event.request and os.path.basename(event.request) == name
                if not (by_name or is_expected or redirected):
                    continue
                lines.extend(event.lines)
                if is_expected:
                    if log.pid not in pids:
                        pids.append(log.pid)
                elif by_name:
                    wrong.append(event.file)
                # another file opened by path (a shim forwarding to the original) is quoted, not wrong
        taken = bool(pids) and not wrong
        actual: Path | None = Path(wrong[0]) if wrong else (Path(want_real) if pids else None)
        result.append(BindingEvidence(name, Path(want), actual, taken, _dedupe(lines), pids))
    return result


def _dedupe(lines: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(lines))


def _run_teeing_stderr(argv: Sequence[str], env: Mapping[str, str],
                       timeout: float | None) -> tuple[ProcessEnd, str]:
    """Run with the workload's stderr still reaching ours, keeping its tail to read ld.so's messages.

    Our stderr gone (``2>&1 | head`` ended): the pipe's read end is closed, so the workload's next write
    fails as it would without zluda-run in between (EPIPE, SIGPIPE) instead of blocking on a full pipe.
    The pump owns its two descriptors (the read end, its own copy of our stderr) and closes them when it
    ends, which may be after we return (a daemon the workload left behind still holds the pipe).

    No stderr at all (``2>&-``, a service started with it closed): the workload has none either, as
    without zluda-run; ld.so could not say a word, so there is nothing to read (the logs still are)."""
    try:
        os.fstat(2)
    except OSError:
        return run_process_end(argv, env, timeout=timeout), ""
    read_fd, write_fd = os.pipe()
    saved = os.dup(2)
    out = os.dup(saved)
    kept = bytearray()

    def pump() -> None:
        try:
            while chunk := os.read(read_fd, 65536):
                kept.extend(chunk)
                if len(kept) > _STDERR_KEPT:
                    del kept[: len(kept) - _STDERR_KEPT]
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
        except OSError:  # our stderr is closed or broken: stop reading, the workload's writes fail
            pass
        finally:
            os.close(read_fd)
            os.close(out)

    thread = threading.Thread(target=pump, daemon=True)
    blockable = getattr(signal, "pthread_sigmask", None)
    watched = {s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")) if s}
    old = blockable(signal.SIG_BLOCK, watched) if blockable else None
    try:  # the pump inherits the block: Ctrl-C goes to the thread that waits for the workload
        thread.start()
    except BaseException:
        for fd in (read_fd, write_fd, out, saved):
            os.close(fd)
        raise
    finally:
        if blockable and old is not None:
            blockable(signal.SIG_SETMASK, old)
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
        os.dup2(write_fd, 2)
        try:
            end = run_process_end(argv, env, timeout=timeout)
        finally:
            with contextlib.suppress(OSError, AttributeError):  # our own stderr may be a broken pipe
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(write_fd)
        thread.join(timeout=5)  # a daemon the workload left behind may hold the pipe: do not wait on it
    finally:
        os.close(saved)
    return end, kept.decode("utf-8", "replace")


def verify_bindings(
    argv: Sequence[str],
    env: Mapping[str, str],
    expected: Mapping[str, Path],
    *,
    timeout: float | None = None,
    keep_logs: Path | None = None,
) -> VerifyResult:
    """Run ``argv`` (stdio inherited) with the loader logging, and report every expected binding.

    ``keep_logs``: copy the raw ``ld.<pid>`` logs into this folder as well. A Windows run (``env``
    carries the expectations :func:`~zluda_runner.launch.run.prepare_run` put there) is judged by the
    process's own module list instead (:mod:`zluda_runner.launch.windows.verify`).
    """
    from zluda_runner.launch.windows.verify import PLANNED_ENV

    planned = env.get(PLANNED_ENV)
    if planned is not None:
        from zluda_runner.launch.windows.verify import verify_windows

        result: VerifyResult = verify_windows(argv, env, planned, timeout=timeout)
        return result
    log_dir = Path(tempfile.mkdtemp(prefix="zluda-runner-ld-"))
    try:
        run_env = dict(env)
        run_env["LD_DEBUG"] = LD_DEBUG_VALUE
        run_env["LD_DEBUG_OUTPUT"] = str(log_dir / LOG_PREFIX)
        end, stderr = _run_teeing_stderr(argv, run_env, timeout)
        logs = read_ld_debug_logs(log_dir)
        if keep_logs is not None:
            Path(keep_logs).mkdir(parents=True, exist_ok=True)
            for path in log_dir.iterdir():
                shutil.copy2(path, Path(keep_logs) / path.name)
        # the signal from the wait status: a workload's own `exit 139` is not a crash
        errors, warnings = split_loader_lines(loader_errors_in(stderr), expected)
        return VerifyResult(end.exit_code, evidence_for(logs, expected), errors, end.signal,
                            stopped_by=end.signal if end.signal in (end.sent_by_user, _SIGPIPE) else None,
                            loader_warnings=warnings)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)


def verify_torch_import(plan: ShimPlan, cache_dir: Path, *, timeout: float | None = None) -> VerifyResult:
    """``plan --verify-load``: ``python -c "import torch"`` under the plan, every binding proven.

    Linux only: on Windows the proof needs the DLLs placed, and ``plan`` changes nothing."""
    from zluda_runner.launch.prepare import expected_bindings, launch_env

    if plan.os == "windows":
        raise LaunchError(
            "{cmd:plan --verify-load} cannot prove a Windows plan: the proof needs ZLUDA's DLLs placed into "
            "torch/lib, and plan changes nothing",
            hint='run {cmd:--verify-load -- python -c "import torch"}: it places, runs, and reads the '
                 "process's own module list",
        )

    python = plan.target.python or sys.executable
    env = launch_env(plan, cache_dir)
    result = verify_bindings([python, "-c", "import torch"], env, expected_bindings(plan), timeout=timeout)
    if result.exit_code != 0 and not result.interrupted and not result.failed:  # nothing loaded: no proof
        result.unproven = (f'the proof run ({python} -c "import torch") exited {result.exit_code}: torch did '
                           f"not import, so nothing was loaded to prove (is there a torch in {python}?)")
    return result
