"""Which target a command runs (an interpreter, a binary, or neither), what it needs, and its torch's CUDA."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.core.settings import Settings

if TYPE_CHECKING:  # the stages themselves are imported lazily: a cached launch stays fast
    from zluda_runner.inspection.profile import TargetProfile
    from zluda_runner.release.layout import ReleaseLayout


@dataclass
class TargetChoice:
    """How the target is found: an interpreter, or a binary."""

    python: str | None
    binary: str | None


def choose_target(argv: Sequence[str], settings: Settings) -> TargetChoice:
    """``--python`` wins; else the interpreter the command runs; else the command's binary."""
    if settings.python:
        return TargetChoice(settings.python, None)
    if argv:
        from zluda_runner.inspection.interpreter import interpreter_for_command

        python = interpreter_for_command(argv)
        if python:
            return TargetChoice(python, None)
        exe = _command_path(argv[0])
        if exe and Path(exe).is_file() and _is_program(Path(exe)):
            return TargetChoice(None, str(Path(exe).resolve()))
        return TargetChoice(None, None)  # a shell or batch script, a launcher: not inspectable
    return TargetChoice(sys.executable, None)


def _command_path(word: str) -> str | None:
    """The file a command's first word runs: a path as given (``/`` or, on Windows, ``\\``), else
    found on PATH (with PATHEXT on Windows: ``app`` runs ``app.exe``)."""
    if os.sep in word or (os.altsep is not None and os.altsep in word):
        return word
    return shutil.which(word)


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _is_program(path: Path) -> bool:
    """An ELF or PE (``.exe``) file: one inspection can read."""
    if _is_elf(path):
        return True
    from zluda_runner.binfmt.pe import is_pe

    return is_pe(path)


def inspect_target(choice: TargetChoice, settings: Settings, env: Mapping[str, str]) -> TargetProfile | None:
    from zluda_runner.inspection.inspect import inspect_path, inspect_python

    cache = settings.cache_dir
    if choice.python is None and choice.binary is None:
        return None
    if choice.binary:
        return inspect_path(Path(choice.binary), cache_dir=cache, env=env)
    assert choice.python is not None
    return inspect_python(choice.python, cache_dir=cache, env=env)


ASSUMED_PREFIX = "could not inspect the target"


def assumed_target(argv: Sequence[str], layout: ReleaseLayout) -> TargetProfile:
    """A target that could not be inspected (a script, a launcher that is neither an ELF/PE program
    nor Python): assume it may run any CUDA program or torch, so every library of the release is set up
    under every name it serves, through the redirector (torch-style path preloads are covered)."""
    from zluda_runner.inspection.profile import LibraryNeed, TargetProfile

    libraries: dict[str, LibraryNeed] = {}
    for shim in layout.shims:
        for name in shim.load_names:
            libraries.setdefault(name, LibraryNeed(name=name, family=shim.family, major=shim.cuda_major,
                                                   requested_by=("(assumed)",)))
    command = argv[0] if argv else "the command"
    if layout.os == "windows":
        what = "a PE program (.exe) nor a Python interpreter (a .bat or .cmd script? a launcher?)"
        how = ("started through the release's injector (zluda.exe), which loads ZLUDA's DLLs into the "
               "program before it runs")
    else:
        what = "an ELF program nor a Python interpreter (a shell script? a launcher?)"
        how = "redirected through LD_AUDIT, and child processes inherit the set-up"
    note = (
        f"{ASSUMED_PREFIX}: {command} is neither {what}; assumed it runs CUDA programs or torch: every "
        f"library of the release is set up under every name it serves, {how}"
    )
    return TargetProfile(os=layout.os, build="unknown", roots=(command,), libraries=tuple(libraries.values()),
                         warnings=(note,))



def target_cuda(python: str | None) -> tuple[str | None, str | None]:
    """The CUDA of ``python``'s torch (default: this interpreter), read as ``plan`` reads it, or None
    and a note that says why not (the release is then selected for any CUDA)."""
    from zluda_runner.core.errors import TargetError
    from zluda_runner.inspection.interpreter import check_cuda_build, probe_interpreter, torch_info

    try:
        facts = probe_interpreter(python or sys.executable)
        if facts.torch_path is None:
            return None, (f"no torch in {facts.executable}: CUDA not checked "
                          "({opt:python PY} or {opt:cuda N})")
        info = torch_info(Path(facts.torch_path), facts.torch_version_py)
        check_cuda_build(info, facts.executable)
    except TargetError as exc:
        return None, f"{exc.message}: CUDA not checked ({{opt:python PY}} or {{opt:cuda N}})"
    return info.cuda, None
