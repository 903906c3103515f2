"""The process seam: start a child as the root of a tree we can kill whole, read how it ended.

One function set for both platforms, chosen here once:

- POSIX: the child leads a new session (its own process group) and carries a token of its tree in
  :data:`TREE_ENV` (added to those of the trees it runs in); the tree is the group and every process
  whose environment holds the token (``/proc``: a grandchild that left the group, ``setsid``, a
  daemon's double fork), killed with SIGKILL (callers kill it before reaping the child, so the group
  id is still ours); a signal N that ended a child reads as 128+N, as a shell says it.
- Windows (:mod:`zluda_runner.core.winproc`): the child starts suspended in a Job object with
  ``KILL_ON_JOB_CLOSE`` and a new console process group; the tree is the job, killed with
  ``TerminateJobObject``, and closing it (also when we die) kills what is left; Ctrl-C's
  ``STATUS_CONTROL_C_EXIT`` reads as 130, as SIGINT does on Linux, and a crash code by its name.

Descriptors handed to a child (:func:`start_tree`'s ``pass_fds``) are named in its argv by
:func:`handle_arg` and opened there with :func:`open_inherited`: an fd number on POSIX, an
inheritable handle (the only one inherited besides stdio) on Windows.

A signal sent to us while we start a child must not slip between the start and the handler that
deals with it (its default would end us alone and leave the child running): :func:`signals_held`
takes the signals *before* the start and hands them, held ones first, to the action given once the
child exists.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

WINDOWS = sys.platform == "win32"


TREE_ENV = "ZLUDA_RUNNER_TREE"  # the tokens of the trees a process is in, ":"-separated
_PROC = "/proc"
_KILL_ROUNDS = 100  # scans of /proc while one of the tree is found (it may fork meanwhile)


class ProcessTree:
    """A started child (``proc``) and everything it starts."""

    def __init__(self, proc: subprocess.Popen[bytes], job: Any = None, own_group: bool = True,
                 token: str | None = None) -> None:
        self.proc = proc
        self._job = job  # winproc.Job on Windows
        self._own_group = own_group
        self._token = token

    def kill(self) -> None:
        """Kill the child and all it started, now (harmless when they are gone)."""
        if self._job is not None:
            self._job.terminate()
            return
        if self._own_group and hasattr(os, "killpg"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.proc.kill()
        for _ in range(_KILL_ROUNDS if self._token else 0):
            found = _marked(self._token or "")
            if not found:
                break
            for pid in found:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        """Let go of the tree: on Windows what is still in its job is killed; POSIX: nothing."""
        if self._job is not None:
            self._job.close()


def _marked(token: str) -> list[int]:
    """The live processes (a zombie has no environment left) whose environment holds ``token``."""
    entry = TREE_ENV.encode() + b"="
    found = []
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"{_PROC}/{name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:  # gone, or not ours
            continue
        for item in environ.split(b"\0"):
            if item.startswith(entry) and token.encode() in item[len(entry):].split(b":"):
                found.append(int(name))
                break
    return found


def start_tree(args: Sequence[str], *, own_group: bool = True, pass_fds: Sequence[int] = (),
               **popen: Any) -> ProcessTree:
    """``subprocess.Popen(args, **popen)`` as the root of a killable tree.

    ``own_group``: in its own process group / session (a Ctrl-C typed at the terminal does not
    reach it); False (Windows only: POSIX children always lead their own): it shares our console,
    and gets its Ctrl-C as we do (the workload).
    """
    argv = [str(a) for a in args]
    if sys.platform == "win32":
        from zluda_runner.core import winproc

        if pass_fds:
            handles = [_inheritable_handle(fd) for fd in pass_fds]
            info = popen.pop("startupinfo", None) or subprocess.STARTUPINFO()
            info.lpAttributeList = {"handle_list": handles}
            popen.update(startupinfo=info, close_fds=True)
        proc, job = winproc.popen_in_job(argv, new_group=own_group, **popen)
        return ProcessTree(proc, job, own_group)
    token = os.urandom(8).hex()
    env = dict(os.environ if popen.get("env") is None else popen["env"])
    env[TREE_ENV] = ":".join(filter(None, (env.get(TREE_ENV), token)))
    popen["env"] = env
    proc = subprocess.Popen(argv, pass_fds=tuple(pass_fds), start_new_session=True, **popen)
    return ProcessTree(proc, None, True, token)


def _inheritable_handle(fd: int) -> int:
    if sys.platform != "win32":
        raise OSError("inheritable handles are Windows'")
    import msvcrt

    handle = int(msvcrt.get_osfhandle(fd))
    os.set_handle_inheritable(handle, True)
    return handle


def handle_arg(fd: int) -> str:
    """How a child started with ``pass_fds=[fd]`` names ``fd`` (for :func:`open_inherited`)."""
    if sys.platform == "win32":
        import msvcrt

        return str(int(msvcrt.get_osfhandle(fd)))
    return str(fd)


# the signals that end us by default, sent by ``kill``, a CI job's timeout, a closed terminal; Windows:
# the console's Ctrl-Break (its default ended us at once: our children died with our jobs, our folders stayed)
ENDING_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGBREAK") if hasattr(signal, n))


class Signalled(BaseException):
    """An ending signal, raised where it would have ended the process at once, so the children's
    trees are killed on the way out; the caller ends with ``128 + signum`` after its cleanup
    (:func:`raise_signalled` is the action for :meth:`SignalRelay.deliver_to`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def raise_signalled(signum: int) -> None:
    raise Signalled(signum)


class SignalRelay:
    """Signals taken by :func:`signals_held`: held until :meth:`deliver_to` names what to do.

    Once the action has raised (:func:`raise_signalled`: we are ending), the signals after it are
    dropped: a second ``kill`` (or a SIGHUP after a SIGTERM) must not cut short the cleanup the
    first one started (the trees killed, the temporary folders removed), nor end us by its default
    when the block is left: we end with the first one's 128+N."""

    def __init__(self) -> None:
        self._act: Callable[[int], None] | None = None
        self._held: list[int] = []
        self._ending = False
        self._outer: SignalRelay | None = None  # the enclosing block's relay, whose signals we took

    def _arrived(self, signum: int, _frame: FrameType | None) -> None:
        if self._ending:
            return
        if self._act is None:
            self._held.append(signum)
        else:
            self._run(signum)

    def _run(self, signum: int) -> None:
        assert self._act is not None
        try:
            self._act(signum)
        except BaseException:
            relay: SignalRelay | None = self
            while relay is not None:  # the enclosing blocks' cleanups are this ending's too
                relay._ending = True
                relay._held.clear()
                relay = relay._outer
            raise

    def deliver_to(self, act: Callable[[int], None]) -> None:
        """From now on each signal goes to ``act``; those that came while the child started, first
        (what ``act`` raises comes out of here, where the caller already owns the child)."""
        self._act = act
        while self._held and not self._ending:
            self._run(self._held.pop(0))

    def held(self) -> tuple[int, ...]:
        return tuple(self._held)


@contextlib.contextmanager
def signals_held(signals: Sequence[int]) -> Iterator[SignalRelay]:
    """Take those of ``signals`` whose disposition is the default (they would end us at once; SIGINT's
    is Python's KeyboardInterrupt), or an enclosing :func:`signals_held`'s, for the block; a handler
    of the caller's own, or ``SIG_IGN``, stays as it is. Enter this *before* starting the child and
    call :meth:`SignalRelay.deliver_to` once it runs. When the block ends with signals still held
    (the start failed before ``deliver_to``, or none was called), they are raised again once the
    handlers before are back: the default ends us as it would have, an enclosing block's action gets
    them (a probe worker started inside :func:`zluda_runner.probe.channel.reaping` is held until
    reaping knows it, then killed with the others). Main thread only (elsewhere Python cannot set
    handlers): there nothing is taken."""
    relay = SignalRelay()
    if threading.current_thread() is not threading.main_thread():
        yield relay
        return
    before: dict[int, Any] = {}
    for sig in signals:
        with contextlib.suppress(ValueError, OSError):
            current = signal.getsignal(sig)
            outer = getattr(current, "__self__", None)
            if current in (signal.SIG_DFL, signal.default_int_handler) or isinstance(outer, SignalRelay):
                before[sig] = signal.signal(sig, relay._arrived)
                if isinstance(outer, SignalRelay):
                    relay._outer = outer
    try:
        yield relay
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        for sig in relay.held():
            signal.raise_signal(sig)


def open_inherited(arg: str) -> int:
    """In the child: a writable descriptor for what :func:`handle_arg` named."""
    if sys.platform == "win32":
        import msvcrt

        return int(msvcrt.open_osfhandle(int(arg), os.O_WRONLY))
    return int(arg)


def exit_status(returncode: int) -> int:
    """A return code as zluda-run passes it on: signal N -> 128+N; Windows' Ctrl-C exit -> 130."""
    if WINDOWS:
        from zluda_runner.core import winproc

        return winproc.exit_status(returncode)
    return 128 - returncode if returncode < 0 else returncode


def ended_by(returncode: int | None) -> str | None:
    """What ended a process abnormally (``SIGSEGV``, ``STATUS_ACCESS_VIOLATION``), else None."""
    if returncode is None:
        return None
    if WINDOWS:
        from zluda_runner.core import winproc

        return winproc.termination_name(returncode)
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"
