"""The one child runner: every process zluda-run starts, starts here, under one signal policy.

:func:`run_tree` runs a child to its end (the workload of ``--verify-load``/``--monitor``/``--trace``,
a warmup's run or ``zluda_precompile``, an ``ab``/``poc`` side); :func:`run_child` is the same for the
children we start to learn something (the target interpreter's facts, the HIP query, the doctor's
torch probe, ``ld.so --help``, the C compiler), reading what they print; the probe's workers, read by
:mod:`zluda_runner.probe.channel`, end by :func:`end_tree`. :func:`exec_replacing`
(:mod:`zluda_runner.core.become`, small: a plain launch imports no child machinery) is the one ``exec``
(``zluda-run CMD`` with nothing to do afterwards *becomes* the workload).

The policy (POSIX): the child leads its own session, a tree of its own (its process group and every
process that carries its token, :mod:`zluda_runner.core.proctree`). While it runs, SIGINT, SIGTERM,
SIGHUP and SIGQUIT sent to us are passed on (the terminal's to its whole group, as the terminal would:
it is not in ours) and so are SIGUSR1/SIGUSR2 (to the child). An ending signal, a timeout (SIGTERM)
or an exception in the wait (Ctrl-C in an API caller's own handler, a heartbeat callback that failed)
begins its end: it has ``grace`` seconds (None: as long as it takes, as an exec'd workload would),
then its tree is killed; whatever it leaves behind when it ends is killed too. Then the caller
says how it ended (:class:`Ended`): a workload's exit status, passed on (143, 129, 130); a helper
ends us as the signal would have, 128+N (:meth:`Ended.pass_on`), once everything is gone.

Windows: a Job object is the tree; the workload shares our console (a Ctrl-C reaches it as it reaches
us: we ignore it while it runs); a SIGTERM or a Ctrl-Break (SIGBREAK) to us ends the job at once.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import IO, Any

from zluda_runner.core import proctree
from zluda_runner.core.become import named_signals, shell_script_argv
from zluda_runner.core.proctree import exit_status, signals_held

WINDOWS = sys.platform == "win32"
GRACE_S = 5.0  # a child told to end (a signal passed on, a timeout) has this long before its tree is killed
_POLL_S = 0.05  # the exit polled this often where there is no pidfd (Windows: a wait's slice)


FORWARDED = named_signals("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGBREAK", "SIGUSR1", "SIGUSR2")
ENDING = named_signals("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGBREAK")  # these begin the child's end
_TERMINAL = named_signals("SIGINT", "SIGHUP", "SIGQUIT")  # the terminal sends these to a whole group
_CONSOLE = named_signals("SIGINT", "SIGBREAK")  # Windows: what the console sends the workload and us alike


@dataclass(frozen=True)
class Ended:
    """How a child run by :func:`run_tree` ended (its tree is gone)."""

    returncode: int  # as Popen says it: -N for a signal N on POSIX
    timed_out: bool = False
    stopped_by: int | None = None  # the ending signal sent to us (and passed on) while it ran

    @property
    def exit_code(self) -> int:
        """As a shell reports it: signal N -> 128+N (Windows: Ctrl-C's exit -> 130)."""
        return exit_status(self.returncode)

    @property
    def signal(self) -> int | None:
        """The signal that killed it (POSIX), else None."""
        return -self.returncode if self.returncode < 0 and not WINDOWS else None

    def pass_on(self) -> None:
        """A helper's end: the ending signal sent to us while it ran ends us too, now (128+N; SIGINT
        as Python's KeyboardInterrupt, which zluda-run says as 130)."""
        if self.stopped_by is None:
            return
        if self.stopped_by == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + self.stopped_by)


class _Watch:
    """One child's wait: the signals that come are passed on, its end begun and bounded."""

    def __init__(self, tree: proctree.ProcessTree, grace: float | None) -> None:
        self.tree, self.grace = tree, grace
        self.stopped_by: int | None = None
        self.kill_at = math.inf  # once its end has begun: when its tree is killed
        self.reaped = False
        self.pidfd: int | None = None
        self.wake: tuple[int, int] | None = None
        if not WINDOWS:
            self.wake = os.pipe()
            os.set_blocking(self.wake[1], False)
            with contextlib.suppress(AttributeError, OSError):
                self.pidfd = os.pidfd_open(tree.proc.pid)

    def arrived(self, signum: int) -> None:
        if signum in ENDING and self.stopped_by is None:
            self.stopped_by = signum
            self.end(self.grace, signum)
        elif not self.reaped:
            self.send(signum)
        if self.wake is not None:
            with contextlib.suppress(OSError):
                os.write(self.wake[1], b"!")

    def send(self, signum: int) -> None:
        if WINDOWS or self.reaped:  # no signals to send there: see end()
            return
        pid = self.tree.proc.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum) if signum in _TERMINAL else os.kill(pid, signum)

    def end(self, grace: float | None, signum: int | None = signal.SIGTERM) -> None:
        """Begin its end: ``signum`` passed on (None: it was asked another way), its tree killed after
        ``grace`` (Windows, where there is no signal to pass on: now)."""
        if WINDOWS and signum is not None:
            self.tree.kill()
            return
        if signum is not None:
            self.send(signum)
        if grace is not None:
            self.kill_at = min(self.kill_at, time.monotonic() + grace)

    def dead(self) -> bool:
        """It has ended (POSIX: not reaped, so its group id stays ours until the tree is killed)."""
        if WINDOWS:
            return self.tree.proc.poll() is not None
        try:
            return os.waitid(os.P_PID, self.tree.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def exited(self, seconds: float) -> bool:
        """Wait up to ``seconds`` (or until a signal came) for its end; True once it has ended."""
        if self.dead() or seconds <= 0:
            return self.dead()
        if WINDOWS or self.wake is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.tree.proc.wait(timeout=min(seconds, 0.5))
            return self.dead()
        import select

        poller = select.poll()
        poller.register(self.wake[0], select.POLLIN)
        if self.pidfd is not None:
            poller.register(self.pidfd, select.POLLIN)
        else:
            seconds = min(seconds, _POLL_S)
        poller.poll(None if math.isinf(seconds) else max(1, math.ceil(seconds * 1000)))
        with contextlib.suppress(BlockingIOError, OSError):
            os.set_blocking(self.wake[0], False)
            os.read(self.wake[0], 512)
        return self.dead()

    def wait(self, timeout: float | None, tick: Callable[[float], None] | None, tick_s: float) -> Ended:
        start = time.monotonic()
        limit = math.inf if timeout is None else start + timeout
        next_tick = start + tick_s if tick is not None else math.inf
        timed_out = False
        try:
            while not self.exited(min(limit, next_tick, self.kill_at) - time.monotonic()):
                now = time.monotonic()
                if now >= limit:
                    timed_out, limit = True, math.inf
                    self.end(GRACE_S if self.grace is None else self.grace)
                if now >= self.kill_at:
                    self.tree.kill()
                    self.kill_at = math.inf
                if tick is not None and now >= next_tick:
                    next_tick = now + tick_s
                    tick(now - start)
        except BaseException:  # a heartbeat that failed, a caller's own handler that raised: it ends first
            self.end(GRACE_S if self.grace is None else self.grace)
            with contextlib.suppress(BaseException):
                while not self.exited(self.kill_at - time.monotonic()) and time.monotonic() < self.kill_at:
                    pass
            raise
        finally:
            self.tree.kill()  # what it left behind goes with it (its group id is still ours: not reaped)
            self.reaped = True
            self.tree.proc.wait()
            for fd in (self.pidfd, *(self.wake or ())):
                if fd is not None:
                    os.close(fd)
        return Ended(self.tree.proc.returncode, timed_out, self.stopped_by)


def end_tree(tree: proctree.ProcessTree, *, grace: float, signum: int | None = None) -> int:
    """End a tree started by :func:`proctree.start_tree` and read elsewhere (a probe worker) under the
    same policy: ``signum`` passed on (None: it was asked another way, its stdin closed), ``grace``
    seconds to end, then its whole tree killed and the child reaped; its return code. A signal or an
    exception meanwhile passes on SIGTERM and still ends it (its grace at most) before it is raised."""
    watch = _Watch(tree, grace)
    watch.end(grace, signum)
    return watch.wait(None, None, math.inf).returncode


def run_tree(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    executable: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stdin: IO[bytes] | int | None = None,
    stdout: IO[bytes] | int | None = None,
    stderr: IO[bytes] | int | None = None,
    timeout: float | None = None,
    grace: float | EllipsisType | None = ...,
    tick: Callable[[float], None] | None = None,
    tick_s: float = math.inf,
    started: Callable[[subprocess.Popen[bytes]], None] | None = None,
    shares_console: bool = False,
) -> Ended:
    """Run ``argv`` as the root of its own tree to its end, under the module's policy; how it ended.

    ``grace``: how long it has to end once told to (default :data:`GRACE_S`; None: as long as it
    takes, after a signal passed on; a timeout still gives :data:`GRACE_S`). ``tick``: called every
    ``tick_s`` seconds while it runs (elapsed seconds); what it raises ends the child first.
    ``started``: hears the child as soon as it runs (to read its pipes). ``shares_console`` (Windows:
    the workload): it gets the console's Ctrl-C as we do. The start's OSError (not found, not a
    program) is raised as it is."""
    args = [str(a) for a in argv]
    wait_grace = GRACE_S if isinstance(grace, EllipsisType) else grace
    with signals_held(FORWARDED) as relay, _console_ignored(WINDOWS and shares_console):
        popen: dict[str, Any] = {"env": dict(env) if env is not None else None, "cwd": cwd, "stdin": stdin,
                                 "stdout": stdout, "stderr": stderr}
        try:
            tree = proctree.start_tree(args, own_group=not shares_console, executable=executable, **popen)
        except OSError as exc:  # a script with no #! line runs under /bin/sh, as a shell runs it
            script = shell_script_argv(executable or args[0], args, exc)
            if script is None:
                raise
            tree = proctree.start_tree(script, own_group=not shares_console, **popen)
        try:
            watch = _Watch(tree, wait_grace)
            if started is not None:
                started(tree.proc)
            relay.deliver_to(watch.arrived)
            return watch.wait(timeout, tick, tick_s)
        finally:
            if tree.proc.returncode is None:  # the wait never began (no descriptor for it left)
                tree.kill()
                tree.proc.wait()
            tree.close()


@contextlib.contextmanager
def _console_ignored(ignore: bool) -> Iterator[None]:
    if not ignore or threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers
        return
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in _CONSOLE}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


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


class Tail:
    """The last ``limit`` bytes written to a child's output stream, kept as they come: memory stays
    bounded however much a child writes (``limit`` 0: nothing is kept). The one tail of a child's
    output, for :func:`run_child` and the probe's channel alike."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        if self.limit <= 0:
            return
        self.data += chunk[-self.limit :]
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]

    def drain(self, pipe: IO[bytes]) -> None:
        """Read ``pipe`` to its end (then close it), keeping its tail."""
        with pipe:
            while chunk := pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536):
                self.add(chunk)

    def value(self) -> bytes:
        return bytes(self.data)

    def text(self, limit: int) -> str:
        """The last ``limit`` characters, decoded leniently, surrounding blanks dropped."""
        return self.value().decode("utf-8", "replace").strip()[-limit:]


def run_child(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    max_output: int = MAX_OUTPUT,
) -> ChildResult:
    """Run ``argv`` to completion (or ``timeout`` seconds) and return its output, decoded leniently.
    A signal sent to us while it runs ends it (its tree), then us (:meth:`Ended.pass_on`)."""
    args = tuple(str(a) for a in argv)
    tails = [Tail(max_output), Tail(max_output)]
    readers: list[threading.Thread] = []

    def read(proc: subprocess.Popen[bytes]) -> None:
        for tail, pipe in zip(tails, (proc.stdout, proc.stderr), strict=True):
            readers.append(threading.Thread(target=tail.drain, args=(pipe,), daemon=True))
            readers[-1].start()

    try:
        ended = run_tree(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=timeout, started=read)
    except (OSError, ValueError) as exc:
        return ChildResult(args, None, "", "", start_error=getattr(exc, "strerror", None) or str(exc))
    for reader in readers:
        reader.join(timeout=5)
    ended.pass_on()
    out, err = tails[0].value(), tails[1].value()
    return ChildResult(
        args,
        None if ended.timed_out else ended.returncode,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        timed_out=ended.timed_out,
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
