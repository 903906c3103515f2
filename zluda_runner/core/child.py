"""Run a child process and read what it says: one runner for every helper child.

Children we start to learn something (the target interpreter's facts, the HIP
query, the doctor's torch probe, tools such as ``rocminfo``) all go through
:func:`run_child`: argv lists only, stdin closed, bounded time, output capped,
the child the root of its own process tree (a process group on POSIX, a Job object on
Windows: :mod:`zluda_runner.core.proctree`) so a timeout kills whatever it started.
Nothing here raises for a child that fails: the result says what happened.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from zluda_runner.core.proctree import (
    ENDING_SIGNALS,
    ProcessTree,
    Signalled,
    raise_signalled,
    signals_held,
    start_tree,
)

MAX_OUTPUT = 4 << 20  # bytes kept of each of stdout / stderr


@dataclass(frozen=True)
class ChildResult:
    """What a child did: ``returncode`` None when it timed out or could not start."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    start_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 3) -> str:
        """The last lines of stderr (else stdout), joined: for error messages."""
        text = (self.stderr or self.stdout).strip()
        return " / ".join(text.splitlines()[-lines:]) or "no output"

    def describe(self) -> str:
        """One phrase: how the child ended."""
        if self.start_error:
            return f"could not start {self.argv[0]}: {self.start_error}"
        if self.timed_out:
            return f"{self.argv[0]} did not finish in time"
        return f"{self.argv[0]} exited {self.returncode}: {self.tail()}"


class _Tail:
    """The last ``limit`` bytes of a pipe, read as they come: memory stays bounded however much a
    child writes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def drain(self, pipe: IO[bytes]) -> None:
        with pipe:
            while chunk := pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536):
                self.data += chunk
                if len(self.data) > 2 * self.limit:
                    del self.data[: len(self.data) - self.limit]

    def value(self) -> bytes:
        return bytes(self.data[-self.limit:])


def run_child(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    max_output: int = MAX_OUTPUT,
) -> ChildResult:
    """Run ``argv`` to completion (or ``timeout`` seconds) and return its output, decoded leniently."""
    args = tuple(str(a) for a in argv)
    # SIGTERM/SIGHUP (``kill``, a CI job's timeout) would end us alone by their default, and the child,
    # in a session of its own, would run on unwatched (past its timeout): taken before the start,
    # they kill its tree first, then end us with 128+N
    with signals_held(ENDING_SIGNALS) as relay:
        try:
            tree = start_tree(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env) if env is not None else None,
            )
        except (OSError, ValueError) as exc:
            return ChildResult(args, None, "", "", start_error=getattr(exc, "strerror", None) or str(exc))
        try:
            relay.deliver_to(raise_signalled)  # one held since the start comes out here
            return _collect(tree, args, timeout, max_output)
        except Signalled as stop:
            if tree.proc.returncode is None:  # not reaped yet: its group is still ours to kill
                tree.kill()
                tree.proc.wait()
            raise SystemExit(128 + stop.signum) from None
        finally:
            tree.close()


def _collect(tree: ProcessTree, args: tuple[str, ...], timeout: float, max_output: int) -> ChildResult:
    proc = tree.proc
    assert proc.stdout is not None and proc.stderr is not None
    tails = [_Tail(max_output), _Tail(max_output)]
    readers = [threading.Thread(target=t.drain, args=(pipe,), daemon=True)
               for t, pipe in zip(tails, (proc.stdout, proc.stderr), strict=True)]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        tree.kill()
        proc.wait()
    finally:
        if proc.poll() is None:  # interrupted while waiting: Ctrl-C, a SIGTERM (Signalled)
            tree.kill()
            proc.wait()
    tree.kill()  # whatever the child left behind holding our pipes goes with it
    for reader in readers:
        reader.join(timeout=5)
    out, err = tails[0].value(), tails[1].value()
    return ChildResult(
        args,
        None if timed_out else proc.returncode,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        timed_out=timed_out,
    )


def json_line(text: str, mark: str | None = None) -> Any | None:
    """The JSON value on the last line starting with ``mark`` (or the last line), else None.

    Children print their answer last: a chatty library may write before it.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if mark is not None:
        lines = [ln[len(mark):] for ln in lines if ln.startswith(mark)]
    if not lines:
        return None
    try:
        return json.loads(lines[-1])
    except ValueError:
        return None
