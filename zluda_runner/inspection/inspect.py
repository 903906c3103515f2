"""Inspection entry points: profile an interpreter's torch, a torch folder or one binary.

The target's torch is found without importing it: the target interpreter locates the
package and hands back ``torch/version.py``'s text, parsed here (never executed). The
binaries are then read (ELF or PE, per-file results cached) and the loader is modelled:
glibc's rules on Linux (:mod:`zluda_runner.inspection.linux`), the DLL search torch sets up on
Windows (:mod:`zluda_runner.inspection.windows`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from zluda_runner.core.arch import is_supported, machine
from zluda_runner.core.errors import TargetError
from zluda_runner.inspection.collect import Walked
from zluda_runner.inspection.interpreter import check_cuda_build, probe_interpreter, torch_info
from zluda_runner.inspection.linux import inspect_binary, profile_of, walk_linux_torch
from zluda_runner.inspection.profile import Build, TargetProfile, TorchInfo
from zluda_runner.inspection.windows import walk_windows_torch

# --------------------------------------------------------------------------- entry points


def inspect_python(python: str, *, cache_dir: Path | None = None,
                   env: Mapping[str, str] | None = None) -> TargetProfile:
    """Profile the torch of interpreter ``python`` as a workload run with ``env`` would load it."""
    facts = probe_interpreter(python, env=env)
    if facts.torch_path is None:
        raise TargetError(
            f"there is no torch in {facts.executable} (Python {facts.version})",
            hint="install a CUDA build of torch there, or pass {opt:python} for the interpreter your "
            "workload uses",
        )
    torch_dir = Path(facts.torch_path)
    info = torch_info(torch_dir, facts.torch_version_py)
    check_cuda_build(info, facts.executable)
    base = dataclasses.replace(
        _new_profile(info), python=facts.executable, python_version=facts.version,
        site_packages=tuple(facts.site_packages), startup=facts.startup,
        warnings=tuple(f"target interpreter: {e}" for e in facts.errors),
    )
    walked: Walked
    if facts.platform == "win32" or _has_dlls(torch_dir):
        walked = walk_windows_torch(torch_dir, cache_dir, exec_prefix=Path(facts.exec_prefix))
    else:
        walked = walk_linux_torch(torch_dir, cache_dir, env)
    return _with_host_caveat(profile_of(walked, base))


def inspect_path(path: Path, *, cache_dir: Path | None = None,
                 env: Mapping[str, str] | None = None) -> TargetProfile:
    """Profile a torch folder, a site-packages holding torch, or one ELF/PE binary."""
    p = Path(path).expanduser()
    if not p.exists():
        raise TargetError(f"{p} does not exist", hint="pass a torch folder, a site-packages or a binary")
    if p.is_file():
        return inspect_binary(p, cache_dir, env)
    torch_dir = p if (p / "version.py").is_file() and (p / "lib").is_dir() else p / "torch"
    if not (torch_dir / "version.py").is_file():
        raise TargetError(
            f"{p} is neither a torch folder nor a site-packages with torch in it",
            hint="pass <site-packages>/torch, a site-packages folder, a single .so/.dll, or {opt:python}",
        )
    info = torch_info(torch_dir)
    check_cuda_build(info, str(torch_dir))
    base = dataclasses.replace(_new_profile(info), site_packages=(str(torch_dir.parent),))
    if _has_dlls(torch_dir):
        walked = walk_windows_torch(torch_dir, cache_dir, exec_prefix=_windows_prefix(torch_dir))
    else:
        walked = walk_linux_torch(torch_dir, cache_dir, env)
    return _with_host_caveat(profile_of(walked, base))


def _new_profile(info: TorchInfo) -> TargetProfile:
    build: Build = "cuda" if info.cuda else ("rocm" if info.hip else "cpu")
    if not info.cuda:
        return TargetProfile(torch=info, build=build)
    major = info.cuda.split(".", 1)[0]
    return TargetProfile(torch=info, build=build, cuda_version=info.cuda,
                         cuda_major=int(major) if major.isdigit() else None)


def _has_dlls(torch_dir: Path) -> bool:
    lib = torch_dir / "lib"
    return lib.is_dir() and any(lib.glob("*.dll")) and not any(lib.glob("*.so*"))


def _windows_prefix(torch_dir: Path) -> Path | None:
    """``<prefix>`` of ``<prefix>/Lib/site-packages/torch``, if the layout is that."""
    sp = torch_dir.parent
    if sp.name.lower() == "site-packages" and sp.parent.name.lower() == "lib":
        return sp.parent.parent
    return None




def _with_host_caveat(profile: TargetProfile) -> TargetProfile:
    """On a host that is not x86-64, where a Linux loader finds each library is this host's answer,
    not an x86-64 host's: said, never left silent."""
    if profile.os != "linux" or is_supported():
        return profile
    return dataclasses.replace(profile, warnings=(
        *profile.warnings,
        f"this machine is {machine()}, and ZLUDA is x86-64 only: where the loader finds each library "
        "is modelled with this host's folders, not those of the x86-64 machine the workload runs on"))
