"""Where ROCm (Linux) or the AMD HIP SDK (Windows) is installed, its version, and its library folders.

The launch path asks :func:`find_rocm` for the host's HIP version (to pick a release);
the doctor asks it, and :func:`library_dirs`, to judge the install.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from zluda_runner.host.fs import HostFs
from zluda_runner.host.model import RocmInstall
from zluda_runner.host.tools import ToolRunner


def find_rocm(
    fs: HostFs, env: Mapping[str, str], platform: str, tools: ToolRunner | None
) -> RocmInstall | None:
    """The install HIP programs would use: ``$ROCM_PATH``/``$HIP_PATH``, ``/opt/rocm``, the newest
    ``/opt/rocm-X.Y``; on Windows the HIP SDK.  ``tools`` (may be None) runs ``hipconfig``."""
    if platform == "win32":
        return _find_hip_sdk(fs, env)
    candidates: list[str] = []
    for var in ("ROCM_PATH", "HIP_PATH"):
        if env.get(var):
            candidates.append(env[var])
    candidates.append("/opt/rocm")
    versioned = sorted(fs.glob("/opt", "rocm-*"), key=lambda p: _version_key(p.name[5:]), reverse=True)
    candidates.extend(f"/opt/{p.name}" for p in versioned)
    for cand in candidates:
        if not fs.is_dir(cand):
            continue
        text = fs.read_text(f"{cand}/.info/version")
        if text and text.strip():
            return RocmInstall("rocm", Path(cand), text.strip().splitlines()[0], f"{cand}/.info/version")
        if tools is not None:
            out = tools([str(fs.path(f"{cand}/bin/hipconfig")), "--version"])
            if out and out.strip():
                return RocmInstall("rocm", Path(cand), out.strip().splitlines()[0], "hipconfig --version")
        m = re.search(r"rocm-(\d+\.\d+(?:\.\d+)?)", cand)
        return RocmInstall("rocm", Path(cand), m.group(1) if m else None, "folder name" if m else None)
    return None


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)) or (0,)


def _find_hip_sdk(fs: HostFs, env: Mapping[str, str]) -> RocmInstall | None:
    paths: list[tuple[str, str]] = []
    if env.get("HIP_PATH"):
        paths.append((env["HIP_PATH"], "HIP_PATH"))
    for var in sorted((k for k in env if re.fullmatch(r"HIP_PATH_\d+", k)), reverse=True):
        paths.append((env[var], var))
    program_files = env.get("ProgramFiles", r"C:\Program Files")
    base = f"{program_files}\\AMD\\ROCm"
    for folder in sorted(fs.glob(base, "*"), key=lambda p: _version_key(p.name), reverse=True):
        paths.append((f"{base}\\{folder.name}", "Program Files"))
    for raw, source in paths:
        if fs.is_dir(raw):
            folder_name = PureWindowsPath(raw.rstrip("\\/")).name
            m = re.match(r"\d+\.\d+", folder_name)
            return RocmInstall("hip-sdk", Path(raw), m.group(0) if m else None, source)
    return None


def hip_version(
    env: Mapping[str, str], platform: str, fs: HostFs | None = None, tools: ToolRunner | None = None
) -> str | None:
    """The host's HIP/ROCm version as "X.Y", or None when no install is found."""
    rocm = find_rocm(fs or HostFs(), env, platform, tools)
    mm = rocm.major_minor if rocm else None
    return f"{mm[0]}.{mm[1]}" if mm else None


@dataclass(frozen=True)
class LibraryDirs:
    """Host paths (in the install's own path style) of the libraries ZLUDA loads."""

    rocblas: str  # rocBLAS Tensile kernels
    hipblaslt: str  # hipBLASLt kernels
    miopen_dir: str
    miopen_glob: str
    hip_dir: str  # the HIP runtime library
    hip_glob: str


def library_dirs(rocm: RocmInstall) -> LibraryDirs:
    base = str(rocm.path).rstrip("\\/")
    if rocm.kind == "hip-sdk":
        return LibraryDirs(
            rocblas=f"{base}\\bin\\rocblas\\library",
            hipblaslt=f"{base}\\bin\\hipblaslt\\library",
            miopen_dir=f"{base}\\bin",
            miopen_glob="MIOpen*.dll",
            hip_dir=f"{base}\\bin",
            hip_glob="amdhip64*.dll",
        )
    return LibraryDirs(
        rocblas=f"{base}/lib/rocblas/library",
        hipblaslt=f"{base}/lib/hipblaslt/library",
        miopen_dir=f"{base}/lib",
        miopen_glob="libMIOpen.so*",
        hip_dir=f"{base}/lib",
        hip_glob="libamdhip64.so*",
    )


def files_for_gfx(fs: HostFs, folder: str, gfx: str, prefix: str = "") -> list[str]:
    """Names of files in ``folder`` built for exactly ``gfx`` (``gfx1030`` does not match ``gfx10300``)."""
    pattern = re.compile(re.escape(gfx) + r"(?![0-9a-f])")
    return [p.name for p in fs.glob(folder, f"{prefix}*") if pattern.search(p.name)]
