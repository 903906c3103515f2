"""Start the workload: argv untouched, stdio inherited, signals forwarded, exit code passed back.

What the child (and its own children: ``torchrun`` workers, ``multiprocessing``
spawns, shell scripts) inherits is exactly the ``env`` given here. The launch
set-up lives entirely in environment variables, so every descendant gets it:

- ``LD_LIBRARY_PATH`` (our link folder first, the user's entries after),
- ``LD_PRELOAD`` (bare names or paths), ``LD_AUDIT`` (our redirector or the
  release's ``zluda_ld``) and ``ZLUDA_RUNNER_REDIRECT_MAP`` (the redirector's map),
- ``ZLUDA_*`` variables the release reads (``ZLUDA_NVRTC_LIB``, ``ZLUDA_LOG_DIR`` ...),
- ``DISABLE_ADDMM_CUDA_LT`` and HIP's ``HIP_VISIBLE_DEVICES``/``ROCR_VISIBLE_DEVICES``.

A descendant that scrubs its environment (e.g. a setuid program, or code that
starts children with ``env={}``) loses the set-up; that is the only way out.

How it runs, its signals and its tree are :mod:`zluda_runner.core.child`'s one policy: signals sent
to zluda-run are passed on, the workload decides how it ends (its code is passed back: 143, 130), and
what it started ends with it. :func:`exec_process` is that module's exec (POSIX); on Windows, where
there is no exec, it runs the workload and exits with its code.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.core.become import exec_replacing
from zluda_runner.core.errors import CommandNotExecutableError, CommandNotFoundError, LaunchError

WINDOWS = sys.platform == "win32"


def exit_status(returncode: int) -> int:
    """A ``waitpid``/``Popen`` return code as a shell reports it: signal N -> 128+N (Windows:
    Ctrl-C's ``STATUS_CONTROL_C_EXIT`` -> 130, any other code as it is)."""
    from zluda_runner.core import proctree

    return proctree.exit_status(returncode)


def _env_get(env: Mapping[str, str], key: str) -> str | None:
    """``env[key]``; on Windows, where variable names are case-insensitive, whatever the case."""
    if key in env or not WINDOWS:
        return env.get(key)
    return next((v for k, v in env.items() if k.upper() == key), None)


def _path_hint(env: Mapping[str, str]) -> str:
    if not _env_get(env, "PATH"):
        return "PATH is empty in the environment given: give the command's full path"
    return "it is in no folder on PATH: check the spelling, install it, or give its full path"


def _windows_exts(env: Mapping[str, str]) -> list[str]:
    """The suffixes Windows starts as programs (``PATHEXT``), lower case."""
    pathext = _env_get(env, "PATHEXT") or os.environ.get("PATHEXT") or ".COM;.EXE;.BAT;.CMD"
    return [e.lower() for e in pathext.split(";") if e.startswith(".")]


def _not_runnable_hint(path: Path, env: Mapping[str, str]) -> str:
    if path.is_dir():
        return f"{path} is a folder"
    if WINDOWS:
        exts = ", ".join(_windows_exts(env))
        return (f"Windows starts only programs ({exts}); run a script with its interpreter, "
                f"e.g. python {path.name}")
    return f"chmod +x {path}"


def _runnable(path: Path, env: Mapping[str, str]) -> bool:
    """A file this platform will start: executable on POSIX, a ``PATHEXT`` suffix on Windows."""
    if not path.is_file():
        return False
    if WINDOWS:
        return path.suffix.lower() in _windows_exts(env)
    return os.access(path, os.X_OK)


def _windows_candidates(base: Path, env: Mapping[str, str]) -> list[Path]:
    """``base`` as Windows would try it: as named when its suffix is a program's, else + PATHEXT."""
    exts = _windows_exts(env)
    named = [base] if base.suffix.lower() in exts else []
    return named + [base.with_name(base.name + ext) for ext in exts]


def resolve_command(argv0: str, env: Mapping[str, str]) -> str:
    """The file ``argv0`` runs, found like a shell does (on ``env['PATH']`` for a bare name).

    On Windows as ``cmd`` finds it: a name without a program suffix gets each of ``PATHEXT``
    (``python`` -> ``python.exe``), the current folder is searched before ``PATH``, and only
    those suffixes are runnable (a ``.py`` file is not).

    Raises :class:`CommandNotFoundError` (exit 127) or
    :class:`CommandNotExecutableError` (exit 126).
    """
    if not argv0:
        raise CommandNotFoundError("no command given", hint="{usage}")
    if os.sep in argv0 or (os.altsep and os.altsep in argv0):
        candidate = Path(argv0)
        if WINDOWS:
            program = next((c for c in _windows_candidates(candidate, env) if _runnable(c, env)), None)
            if program is not None:
                return str(program)
        if not candidate.exists():
            raise CommandNotFoundError(
                f"command not found: {argv0}", hint=f"no file at {candidate.absolute()}"
            )
        if not _runnable(candidate, env):
            raise CommandNotExecutableError(
                f"command is not executable: {argv0}", hint=_not_runnable_hint(candidate, env)
            )
        return argv0
    search_path = _env_get(env, "PATH")
    if search_path is None:
        search_path = os.defpath
    folders = search_path.split(os.pathsep)
    if WINDOWS:
        folders = [os.curdir, *folders]
        for folder in folders:
            for cand in _windows_candidates(Path(folder or ".") / argv0, env):
                if _runnable(cand, env):
                    return str(cand)
    else:
        found = shutil.which(argv0, path=search_path)
        if found:
            return found
    for folder in folders:
        candidate = Path(folder or ".") / argv0
        if candidate.is_file():
            raise CommandNotExecutableError(
                f"command is not executable: {argv0} (found {candidate})",
                hint=_not_runnable_hint(candidate, env),
            )
    raise CommandNotFoundError(f"command not found: {argv0}", hint=_path_hint(env))


def command_path(word: str) -> str | None:
    """The file a command's first word runs: a path as given (``/`` or, on Windows, ``\\``), else
    found on PATH (with PATHEXT on Windows: ``app`` runs ``app.exe``)."""
    if os.sep in word or (os.altsep is not None and os.altsep in word):
        return word
    return shutil.which(word)


def _spawn_error(argv0: str, exc: OSError) -> LaunchError:
    if exc.errno == errno.ENOENT:
        # The file exists (we resolved it): a missing interpreter (#!) or ELF loader.
        return CommandNotFoundError(
            f"cannot run {argv0}: {exc.strerror}",
            hint="its interpreter (#! line) or program loader is missing",
        )
    if exc.errno in (errno.EACCES, errno.ENOEXEC, errno.EPERM, errno.EISDIR):
        return CommandNotExecutableError(
            f"cannot execute {argv0}: {exc.strerror}",
            hint="is it a Windows program built for this machine (x64)?" if WINDOWS
            else "is it a program or script with a #! line, built for this machine?",
        )
    return LaunchError(f"cannot start {argv0}: {exc.strerror}", hint="see the error above")


def _word(index: int, word: object) -> str:
    if word is None or isinstance(word, bytes | bytearray):
        raise LaunchError(f"word {index} of the command is {word!r}: a command's words are text",
                          hint="give the command as a list of str (a path as str or pathlib.Path)")
    text = os.fspath(word) if isinstance(word, os.PathLike) else str(word)
    if not isinstance(text, str):
        raise LaunchError(f"word {index} of the command is the bytes path {text!r}: its words are text",
                          hint="give the command as a list of str (a path as str or pathlib.Path)")
    if "\0" in text:
        raise LaunchError(f"word {index} of the command holds a NUL character: {text!r}",
                          hint="no program can be given one (the system passes each word as a C string): "
                          "remove it")
    return text


def command_words(argv: Sequence[object]) -> list[str]:
    """The workload's argv as the system can pass it: text words without NUL (an ``int`` or a
    ``pathlib.Path`` is written as text); :class:`LaunchError` naming the first word that is not
    (``None``, ``bytes``, a NUL inside), before anything is planned or started."""
    if isinstance(argv, str | bytes):
        raise LaunchError(f"the command is one string ({argv!r}), not a list of words",
                          hint="split it into its words: [\"python\", \"infer.py\"] (shlex.split does it)")
    return [_word(i, a) for i, a in enumerate(argv)]


def _check_argv(argv: Sequence[str]) -> list[str]:
    args = command_words(argv)
    if not args:
        raise CommandNotFoundError("no command given", hint="{usage}")
    return args


def exec_process(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Replace this process with the workload (nothing of ours runs afterwards).

    The fast path when no evidence must be collected after the child: no extra
    process, signals and exit status are the workload's own.
    """
    args = _check_argv(argv)
    if WINDOWS:  # os.execve there starts a new process and ends this one at once: no wait, no code
        raise SystemExit(run_process(args, env))
    executable = resolve_command(args[0], env)
    try:
        exec_replacing(executable, args, env)
    except OSError as exc:
        raise _spawn_error(args[0], exc) from exc


@dataclass(frozen=True)
class ProcessEnd:
    """How the workload ended: its exit status as a shell reports it, and what the bare number cannot
    tell apart (``exit 137`` and death by SIGKILL are both 137)."""

    exit_code: int  # as a shell reports it: signal N -> 128+N
    signal: int | None = None  # the signal that killed it (None: it exited, whatever its code)
    sent_by_user: int | None = None  # the signal sent to zluda-run (forwarded) or to the terminal's
    # process group while the workload ran, the last one; None: nobody stopped it from outside


def run_process(argv: Sequence[str], env: Mapping[str, str], *, timeout: float | None = None) -> int:
    """Run the workload to completion and return its exit status (signal N -> 128+N).

    stdin/stdout/stderr are inherited (never captured). ``timeout`` (seconds,
    for tests and ``--verify-load``): the child is killed and :class:`LaunchError`
    raised when it runs longer.
    """
    return run_process_end(argv, env, timeout=timeout).exit_code


def run_process_end(argv: Sequence[str], env: Mapping[str, str], *,
                    timeout: float | None = None) -> ProcessEnd:
    """:func:`run_process`, telling a death by a signal from an exit with the same number, and whether
    the signal came from outside (the user's Ctrl-C or ``kill``) rather than from the workload itself."""
    from zluda_runner.core.child import run_tree

    args = _check_argv(argv)
    executable = resolve_command(args[0], env)
    try:
        ended = run_tree(args, executable=executable, env=env, timeout=timeout, grace=None,
                         shares_console=WINDOWS)
    except OSError as exc:
        raise _spawn_error(args[0], exc) from exc
    if ended.timed_out:
        raise LaunchError(f"the command did not finish within {timeout:g} s and was killed (with all it "
                          "started)", hint="give it a longer timeout")
    return ProcessEnd(ended.exit_code, ended.signal, ended.stopped_by)
