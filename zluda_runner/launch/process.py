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
from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.core.errors import CommandNotExecutableError, CommandNotFoundError, LaunchError

FORWARDED_SIGNALS: tuple[signal.Signals, ...] = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
_RESET_TO_DEFAULT = tuple(getattr(signal, n) for n in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, n))
# si_code of a signal the kernel raised itself (terminal keys, hang-up) rather than kill(2).
_SI_KERNEL = 0x80


def exit_status(returncode: int) -> int:
    """A ``waitpid``/``Popen`` return code as a shell reports it: signal N -> 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def _path_hint(env: Mapping[str, str]) -> str:
    if not env.get("PATH"):
        return "PATH is empty in the environment given: give the command's full path"
    return "it is in no folder on PATH: check the spelling, install it, or give its full path"


def resolve_command(argv0: str, env: Mapping[str, str]) -> str:
    """The file ``argv0`` runs, found like a shell does (on ``env['PATH']`` for a bare name).

    Raises :class:`CommandNotFoundError` (exit 127) or
    :class:`CommandNotExecutableError` (exit 126).
    """
    if not argv0:
        raise CommandNotFoundError("no command given", hint="usage: zluda-run [options] -- CMD [ARGS...]")
    if os.sep in argv0 or (os.altsep and os.altsep in argv0):
        candidate = Path(argv0)
        if not candidate.exists():
            raise CommandNotFoundError(
                f"command not found: {argv0}", hint=f"no file at {candidate.absolute()}"
            )
        if candidate.is_dir() or not os.access(candidate, os.X_OK):
            raise CommandNotExecutableError(
                f"command is not executable: {argv0}",
                hint=f"chmod +x {argv0}" if candidate.is_file() else f"{argv0} is a folder",
            )
        return argv0
    search_path = env.get("PATH", os.defpath)
    found = shutil.which(argv0, path=search_path)
    if found:
        return found
    for folder in search_path.split(os.pathsep):
        candidate = Path(folder or ".") / argv0
        if candidate.is_file():
            raise CommandNotExecutableError(
                f"command is not executable: {argv0} (found {candidate})", hint=f"chmod +x {candidate}"
            )
    raise CommandNotFoundError(f"command not found: {argv0}", hint=_path_hint(env))


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
            hint="is it a program or script with a #! line, built for this machine?",
        )
    return LaunchError(f"cannot start {argv0}: {exc.strerror}", hint="see the error above")


def _check_argv(argv: Sequence[str]) -> list[str]:
    args = [str(a) for a in argv]
    if not args:
        raise CommandNotFoundError("no command given", hint="usage: zluda-run [options] -- CMD [ARGS...]")
    return args


def exec_process(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Replace this process with the workload (nothing of ours runs afterwards).

    The fast path when no evidence must be collected after the child: no extra
    process, signals and exit status are the workload's own.
    """
    args = _check_argv(argv)
    executable = resolve_command(args[0], env)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(executable, args, dict(env))  # noqa: S606 (argv list, no shell)
    except OSError as exc:
        raise _spawn_error(args[0], exc) from exc


def run_process(argv: Sequence[str], env: Mapping[str, str], *, timeout: float | None = None) -> int:
    """Run the workload to completion and return its exit status (signal N -> 128+N).

    stdin/stdout/stderr are inherited (never captured). ``timeout`` (seconds,
    for tests and ``--verify-load``): the child is killed and :class:`LaunchError`
    raised when it runs longer.
    """
    args = _check_argv(argv)
    executable = resolve_command(args[0], env)
    if threading.current_thread() is not threading.main_thread():
        return _run_without_forwarding(executable, args, env, timeout)

    watched = {*FORWARDED_SIGNALS, signal.SIGCHLD}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    try:
        try:
            # The child starts with the caller's mask, and with SIGPIPE/SIGXFSZ back to default
            # (Python ignores them; `zluda-run cmd | head` must end cmd like a shell would).
            pid = os.posix_spawn(
                executable, args, dict(env), setsigmask=old_mask, setsigdef=_RESET_TO_DEFAULT
            )
        except OSError as exc:
            raise _spawn_error(args[0], exc) from exc
        return _wait_forwarding(pid, watched, timeout)
    finally:
        _drain(watched)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _wait_forwarding(pid: int, watched: set[signal.Signals], timeout: float | None) -> int:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return exit_status(os.waitstatus_to_exitcode(status))
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
) -> int:
    """Off the main thread we cannot own signals: run and wait, nothing forwarded."""
    import subprocess

    try:
        proc = subprocess.Popen(args, executable=executable, env=dict(env))
    except OSError as exc:
        raise _spawn_error(args[0], exc) from exc
    try:
        return exit_status(proc.wait(timeout=timeout))
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.wait()
        raise LaunchError(
            f"the command did not finish within {timeout:g} s and was killed", hint="give it a longer timeout"
        ) from exc
