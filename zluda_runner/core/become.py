"""The one ``exec``: ``zluda-run CMD`` with nothing to do afterwards *becomes* the workload
(:func:`exec_replacing`), signals and exit status its own. Small on purpose: a plain launch imports this,
not the child runner (:mod:`zluda_runner.core.child`, which runs children to their end)."""

from __future__ import annotations

import errno
import os
import signal
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

WINDOWS = sys.platform == "win32"
_SH = "/bin/sh"


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
    the OSError of the start."""
    for stream in (sys.stdout, sys.stderr):  # None when started with that descriptor closed (2>&-)
        if stream is not None:
            stream.flush()
    import threading

    main = threading.current_thread() is threading.main_thread()
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
    except OSError:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        raise
