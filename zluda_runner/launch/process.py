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

Signals: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to us are
forwarded to the child. A signal the kernel sends to the whole foreground
process group (Ctrl-C, Ctrl-\\, terminal hang-up) already reaches the child,
which shares our process group, so it is not sent a second time.

On Windows (measured under Wine 8 with the official CPython, tests/windows/test_wine_process.py)
there is no exec: :func:`exec_process` runs the workload and exits with its code. The workload
is the root of a Job object (:mod:`zluda_runner.core.proctree`): a timeout kills its whole tree,
and whatever it leaves running dies with zluda-run's job handle, however zluda-run ends. It
shares our console, so Ctrl-C/Ctrl-Break reach it as they reach us; we ignore them while it runs
(as the terminal's signals on Linux) and pass on its exit code, ``STATUS_CONTROL_C_EXIT`` as 130.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.core import proctree
from zluda_runner.core.errors import CommandNotExecutableError, CommandNotFoundError, LaunchError

WINDOWS = sys.platform == "win32"
# Only the names this platform has (Windows has SIGINT, SIGTERM and SIGBREAK, and no sigwait).
FORWARDED_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, n)
)
# What a console sends us and the workload alike on Windows: ignored by us while it runs.
_CONSOLE_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGBREAK") if hasattr(signal, n))
_RESET_TO_DEFAULT = tuple(getattr(signal, n) for n in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, n))
# si_code of a signal the kernel raised itself (terminal keys, hang-up) rather than kill(2).
_SI_KERNEL = 0x80


def exit_status(returncode: int) -> int:
    """A ``waitpid``/``Popen`` return code as a shell reports it: signal N -> 128+N (Windows:
    Ctrl-C's ``STATUS_CONTROL_C_EXIT`` -> 130, any other code as it is)."""
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


_SH = "/bin/sh"


def _as_shell_script(executable: str, args: list[str], exc: OSError) -> tuple[str, list[str]] | None:
    """What a shell (and POSIX ``execvp``) runs when the kernel refuses a file as not a program
    (ENOEXEC): an executable text file with no ``#!`` line is a script for ``/bin/sh``. None for
    anything else (a binary for another machine keeps its error: a NUL in its first line, as bash
    tells them apart)."""
    if WINDOWS or exc.errno != errno.ENOEXEC or not os.path.exists(_SH):
        return None
    try:
        with open(executable, "rb") as handle:
            head = handle.read(80)
    except OSError:
        return None
    if b"\0" in head.split(b"\n", 1)[0]:
        return None
    return _SH, [_SH, executable, *args[1:]]


def shell_script_argv(argv: Sequence[str], exc: OSError) -> list[str] | None:
    """``argv`` as a shell runs it when starting its program failed with ``exc``: ``/bin/sh PROGRAM
    ARGS`` for an executable text file with no ``#!`` line (ENOEXEC), else None (the error stands).
    For starters other than this module's own (``ab``/``poc`` runs), so every path runs it alike."""
    found = _as_shell_script(argv[0], list(argv), exc) if argv else None
    return found[1] if found is not None else None


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
    for stream in (sys.stdout, sys.stderr):  # None when started with that descriptor closed (2>&-)
        if stream is not None:
            stream.flush()
    # An ignored signal stays ignored across exec: Python ignores SIGPIPE and SIGXFSZ, and a workload
    # left so would write on to a closed pipe (`zluda-run cmd | head` never ended a looping cmd)
    # or past `ulimit -f`; back to default as run_process's children and a shell's get them.
    resets = _RESET_TO_DEFAULT if threading.current_thread() is threading.main_thread() else ()
    previous = {sig: signal.signal(sig, signal.SIG_DFL) for sig in resets}
    try:
        try:
            os.execve(executable, args, dict(env))  # noqa: S606 (argv list, no shell)
        except OSError as exc:
            script = _as_shell_script(executable, args, exc)
            if script is None:
                raise
            os.execve(script[0], script[1], dict(env))  # noqa: S606 (a script without #!, as a shell runs it)
    except OSError as exc:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
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
    args = _check_argv(argv)
    executable = resolve_command(args[0], env)
    if WINDOWS:
        return ProcessEnd(_run_windows(executable, args, env, timeout))
    if threading.current_thread() is not threading.main_thread():
        return _run_without_forwarding(executable, args, env, timeout)

    watched = {*FORWARDED_SIGNALS, signal.SIGCHLD}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    try:
        try:
            # The child starts with the caller's mask, and with SIGPIPE/SIGXFSZ back to default
            # (Python ignores them; `zluda-run cmd | head` must end cmd like a shell would).
            try:
                pid = os.posix_spawn(
                    executable, args, dict(env), setsigmask=old_mask, setsigdef=_RESET_TO_DEFAULT
                )
            except OSError as exc:
                script = _as_shell_script(executable, args, exc)
                if script is None:
                    raise
                pid = os.posix_spawn(
                    script[0], script[1], dict(env), setsigmask=old_mask, setsigdef=_RESET_TO_DEFAULT
                )
        except OSError as exc:
            raise _spawn_error(args[0], exc) from exc
        return _wait_forwarding(pid, watched, timeout)
    finally:
        _drain(watched)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _wait_forwarding(pid: int, watched: set[signal.Signals], timeout: float | None) -> ProcessEnd:
    deadline = None if timeout is None else time.monotonic() + timeout
    from_outside: int | None = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            # a terminal's signal may still be pending when the child it also reached has died
            while (late := signal.sigtimedwait(watched, 0)) is not None:
                if late.si_signo != signal.SIGCHLD:
                    from_outside = late.si_signo
            killed_by = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            return ProcessEnd(exit_status(os.waitstatus_to_exitcode(status)), killed_by, from_outside)
        info: signal.struct_siginfo | None
        if deadline is None:
            info = signal.sigwaitinfo(watched)
        else:
            remaining = deadline - time.monotonic()
            info = signal.sigtimedwait(watched, max(remaining, 0.0)) if remaining > 0 else None
        if info is None:
            _kill_and_reap(pid)
            raise LaunchError(
                f"the command did not finish within {timeout:g} s and was killed",
                hint="give it a longer timeout",
            )
        if info.si_signo == signal.SIGCHLD:
            continue
        from_outside = info.si_signo
        if info.si_code == _SI_KERNEL:
            continue  # terminal-generated: the child, in our process group, got it too
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, info.si_signo)


def _kill_and_reap(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _drain(watched: set[signal.Signals]) -> None:
    """Consume signals still pending so unblocking them cannot kill us afterwards."""
    while signal.sigtimedwait(watched, 0) is not None:
        pass


def _run_without_forwarding(
    executable: str, args: list[str], env: Mapping[str, str], timeout: float | None
) -> ProcessEnd:
    """Off the main thread we cannot own signals: run and wait, nothing forwarded."""
    import subprocess

    try:
        proc = subprocess.Popen(args, executable=executable, env=dict(env))
    except OSError as exc:
        raise _spawn_error(args[0], exc) from exc
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.wait()
        raise LaunchError(
            f"the command did not finish within {timeout:g} s and was killed", hint="give it a longer timeout"
        ) from exc
    return ProcessEnd(exit_status(code), -code if code < 0 else None)


def _run_windows(executable: str, args: list[str], env: Mapping[str, str], timeout: float | None) -> int:
    """The workload as the root of a Job object, sharing our console; its exit code (Ctrl-C: 130).

    A console's Ctrl-C/Ctrl-Break reach the workload and us alike: we ignore them while it runs
    (it decides how it ends, as with the terminal's signals on Linux), then pass its code on."""
    import subprocess

    try:
        tree = proctree.start_tree(args, own_group=False, executable=executable, env=dict(env))
    except OSError as exc:
        raise _spawn_error(args[0], exc) from exc
    try:
        with _console_signals_ignored():
            try:
                return exit_status(tree.proc.wait(timeout=timeout))
            except subprocess.TimeoutExpired as exc:
                tree.kill()
                tree.proc.wait()
                raise LaunchError(
                    f"the command did not finish within {timeout:g} s and was killed (with all it started)",
                    hint="give it a longer timeout",
                ) from exc
    finally:
        tree.close()  # anything it left running dies with the job: no orphan outlives zluda-run


@contextlib.contextmanager
def _console_signals_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; Python raises KeyboardInterrupt there
        return
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in _CONSOLE_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
