"""One run of a side's command as the root of a process tree that ends with it.

A side is a workload that may start its own children (``torchrun`` workers, DataLoader processes, a
shell script's commands).  Each run is the root of its own tree (:mod:`zluda_runner.core.proctree`:
a process group on POSIX, a Job object on Windows), so nothing it started outlives the run: not
after a timeout, not after Ctrl-C or a SIGTERM/SIGHUP sent to zluda-run, and not after it exits
(a leftover would hold the GPU's memory into the next run).  Its stdin is closed: its output goes
to files, so nobody would see a prompt, and a workload waiting for input would wait forever.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import IO

from zluda_runner.core.proctree import start_tree
from zluda_runner.launch.process import shell_script_argv

# signals that end zluda-run by default: while a run waits, they first end the run's tree
_ENDING = tuple(s for s in (getattr(signal, n, None) for n in ("SIGTERM", "SIGHUP")) if s is not None)


class _Signalled(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def run_tree(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None,
    stdout: IO[bytes],
    stderr: IO[bytes],
    timeout: float | None,
) -> int:
    """Run ``argv`` to its end and return its return code; ``subprocess.TimeoutExpired`` after
    ``timeout`` seconds.  Whatever ends the wait, the whole tree is killed before this returns."""
    try:
        tree = start_tree(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout,
                          stderr=stderr)
    except OSError as exc:  # a script with no #! line runs under /bin/sh, as `zluda-run CMD` runs it
        script = shell_script_argv(argv, exc)
        if script is None:
            raise
        tree = start_tree(script, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout,
                          stderr=stderr)
    try:
        with _ending_signals_raise():
            try:
                return tree.proc.wait(timeout=timeout)
            finally:  # the timeout, Ctrl-C, a signal (the child is not reaped yet), or its end
                tree.kill()
                with contextlib.suppress(OSError):
                    tree.proc.wait()
                tree.close()
    except _Signalled as stop:  # it would have ended us: so it does, after every cleanup on the way out
        raise SystemExit(128 + stop.signum) from None


@contextlib.contextmanager
def _ending_signals_raise() -> Iterator[None]:
    """SIGTERM/SIGHUP raise :class:`_Signalled` while the block runs, where they would end the process
    at once (their default action; a handler of the caller's, or SIG_IGN, stays as it is: what it
    raises goes through the tree's killing too).  Main thread only: elsewhere Python cannot set
    handlers.  The handlers before are back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise _Signalled(signum)

    before: dict[int, object] = {}
    for sig in _ENDING:
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(sig) is signal.SIG_DFL:
                before[sig] = signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
