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
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from zluda_runner.core.proctree import ENDING_SIGNALS, Signalled, raise_signalled, signals_held, start_tree
from zluda_runner.launch.process import shell_script_argv


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
    # the ending signals are taken before the start: one between the start and the wait would end
    # zluda-run alone and leave the run's tree going
    with signals_held(ENDING_SIGNALS) as relay:
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
            try:
                relay.deliver_to(raise_signalled)  # SIGTERM/SIGHUP: the tree first
                return tree.proc.wait(timeout=timeout)
            finally:  # the timeout, Ctrl-C, a signal (the child is not reaped yet), or its end
                tree.kill()
                with contextlib.suppress(OSError):
                    tree.proc.wait()
                tree.close()
        except Signalled as stop:  # it would have ended us: so it does, after every cleanup on the way out
            raise SystemExit(128 + stop.signum) from None

