"""The two commands an A/B comparison runs: A under ZLUDA, B native (or any two commands)."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence

from zluda_runner.core.errors import HostError
from zluda_runner.core.settings import Settings
from zluda_runner.launch.warmup import zluda_run_argv


def default_side_a(
    script: Sequence[str], python: str | None = None, settings: Settings | None = None
) -> list[str]:
    """``zluda-run [global options] run -- <python> SCRIPT ARGS``: the script under ZLUDA.

    ``python`` (default: ``settings.python``, else this interpreter) runs the script; the
    global options in ``settings`` (release, ZLUDA folder, cache, ``--force``) are handed on.
    """
    interpreter = python or (settings.python if settings else None) or sys.executable
    return zluda_run_argv([interpreter, *script], settings)


def default_side_b(script: Sequence[str], b_python: str) -> list[str]:
    return [b_python, *script]


def split_command(text: str, what: str = "{opt:a_cmd}/{opt:b_cmd}") -> list[str]:
    """A ``--a-cmd``/``--b-cmd`` string (``what``: the option it came from, for the hint) as argv (shlex
    rules, never a shell)."""
    try:
        argv = shlex.split(text, posix=os.name != "nt")
    except ValueError as exc:
        raise HostError(f"cannot split command {text!r}: {exc}", hint="check the quotes") from None
    if not argv:
        raise HostError("empty command", hint=f"give {what} a program to run")
    return argv


def _found(program: str, path: str | None = None) -> bool:
    import shutil

    return shutil.which(program, path=path) is not None or (
        any(sep in program for sep in (os.sep, os.altsep) if sep) and os.path.isfile(program))


def _existing(python: str) -> str:
    """``--b-python`` as given, when it names a program that exists (else nothing runs at all)."""
    if not _found(python):
        raise HostError(f"{{opt:b_python {python}}} does not exist (not a file, not on PATH)",
                        hint="give the interpreter of a native ROCm torch, "
                        "e.g. {opt:b_python ~/rocm/bin/python}")
    return python


def check_program(argv: Sequence[str], what: str, path: str | None = None) -> None:
    """``argv``'s program exists (a file, or a name on ``path``, default ``$PATH``): else a side would
    fail every one of its runs, with the other side's runs (minutes each) made for nothing."""
    if argv and not _found(argv[0], path):
        raise HostError(f"{what}: {argv[0]} was not found (not a file, not on PATH)",
                        hint=f"give {what} a program that exists here: a path or a name on PATH")


def ab_sides(
    script: Sequence[str],
    *,
    a_cmd: str | None = None,
    b_cmd: str | None = None,
    b_python: str | None = None,
    settings: Settings | None = None,
) -> tuple[list[str], list[str]]:
    """Side A and side B argv from ``zluda-run ab``'s options.

    A: ``--a-cmd`` + SCRIPT ARGS, else SCRIPT under ZLUDA (:func:`default_side_a`).
    B: ``--b-cmd`` + SCRIPT ARGS, else ``--b-python`` SCRIPT ARGS.
    """
    args = list(script[1:] if script and script[0] == "--" else script)
    if a_cmd:
        a_argv = split_command(a_cmd) + args
        check_program(a_argv, "{opt:a_cmd}")
    elif args:
        a_argv = default_side_a(args, settings=settings)
    else:
        raise HostError("nothing to run on side A", hint="give a SCRIPT after --, or {opt:a_cmd}")
    if b_cmd:
        b_argv = split_command(b_cmd) + args
        check_program(b_argv, "{opt:b_cmd}")
    elif b_python and args:
        b_argv = default_side_b(args, _existing(b_python))
    elif b_python:
        raise HostError(
            "{opt:b_python} needs a SCRIPT to run", hint="{cmd:ab --b-python PY -- SCRIPT [ARGS]}"
        )
    else:
        raise HostError(
            "nothing to run on side B", hint="give {opt:b_python PY} (a native ROCm python) or {opt:b_cmd}"
        )
    return a_argv, b_argv
