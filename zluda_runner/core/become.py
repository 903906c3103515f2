"""The one ``exec``: ``zluda-run CMD`` with nothing to do afterwards *becomes* the workload
(:func:`exec_replacing`), signals and exit status its own. Small on purpose: a plain launch imports this,
not the child runner (:mod:`zluda_runner.core.child`, which runs children to their end)."""

from __future__ import annotations

import errno
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Mapping, Sequence
else:
    try:  # the signal module's C core: the same functions and numbers, without its enum classes
        import _signal as signal
    except ImportError:  # pragma: no cover - an interpreter without it
        import signal

WINDOWS = sys.platform == "win32"
_SH = "/bin/sh"
# Heard just before the exec, with what is executed (the program, its words, its environment): the launch
# memo remembers exactly that (zluda_runner.commands.launchmemo). A failing one never stops the exec.
BEFORE_EXEC: list[Callable[[str, Sequence[str], Mapping[str, str]], None]] = []


def named_signals(*names: str) -> tuple[int, ...]:
    """The numbers of the signals called ``names`` that this platform has."""
    return tuple(getattr(signal, n) for n in names if hasattr(signal, n))


def shell_script_argv(program: str, args: Sequence[str], exc: OSError) -> list[str] | None:
    """What a shell (and POSIX ``execvp``) runs when the kernel refuses ``program`` as not a program
    (ENOEXEC): an executable text file with no ``#!`` line is a script for ``/bin/sh``: ``/bin/sh
    PROGRAM ARGS[1:]``. None for anything else (a binary for another machine keeps its error: a NUL
    in its first line, as bash tells them apart)."""
    if WINDOWS or exc.errno != errno.ENOEXEC or not os.path.exists(_SH):
        return None
    try:
        with open(program, "rb") as handle:
            head = handle.read(80)
    except OSError:
        return None
    if b"\0" in head.split(b"\n", 1)[0]:
        return None
    return [_SH, program, *args[1:]]


def exec_replacing(executable: str, args: Sequence[str], env: Mapping[str, str]) -> None:
    """Replace this process with ``executable`` (POSIX; a script without ``#!`` under ``/bin/sh``), with
    SIGPIPE and SIGXFSZ back to their defaults (Python ignores them, and an ignored signal stays
    ignored across exec: ``zluda-run cmd | head`` never ended a looping cmd). Returns only by raising
    the OSError of the start; whatever is raised instead of the exec leaves the signals as they were."""
    for heard in list(BEFORE_EXEC):
        try:  # noqa: SIM105 (no contextlib on a launch's path)
            heard(executable, args, env)
        except Exception:  # noqa: S110 (what hears the exec never stands in its way)
            pass
    for stream in (sys.stdout, sys.stderr):  # None when started with that descriptor closed (2>&-)
        if stream is not None:
            stream.flush()
    threading = sys.modules.get("threading")  # never imported: no other thread was started with it
    main = threading is None or threading.current_thread() is threading.main_thread()
    resets = named_signals("SIGPIPE", "SIGXFSZ") if main else ()
    previous = {sig: signal.signal(sig, signal.SIG_DFL) for sig in resets}
    try:
        try:
            os.execve(executable, list(args), dict(env))  # noqa: S606 (argv list, no shell)
        except OSError as exc:
            script = shell_script_argv(executable, args, exc)
            if script is None:
                raise
            os.execve(script[0], script, dict(env))  # noqa: S606 (a script without #!, as a shell runs it)
    except BaseException:  # no exec happened (its error, or anything else): this process is as it was
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        raise
