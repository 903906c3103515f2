"""Where ROCm (Linux) or the AMD HIP SDK (Windows) is installed, its version, and its library folders.

The doctor asks :func:`find_rocm` and :func:`library_dirs` to judge the install; the version
itself comes from :mod:`zluda_runner.host.hipversion`, as for every other command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.host.fs import HostFs
from zluda_runner.host.hipversion import find_host_hip
from zluda_runner.host.model import RocmInstall
from zluda_runner.host.tools import ToolRunner


def find_rocm(
    fs: HostFs, env: Mapping[str, str], platform: str, tools: ToolRunner | None = None
) -> RocmInstall | None:
    """The install HIP programs would use, found by :func:`~zluda_runner.host.hipversion.find_host_hip`
    (the one finder every command uses: ROCm folders, the HIP SDK, distribution packages).

    ``tools`` (may be None) runs ``hipconfig`` when a ROCm folder has no readable version.
    """
    found = find_host_hip(fs.root, env, platform)
    if found is None:
        return None
    version, source = found.version, found.source
    if version is None and found.kind == "rocm" and tools is not None:
        out = tools([str(fs.path(f"{found.path}/bin/hipconfig")), "--version"])
        if out and out.strip():
            version, source = out.strip().splitlines()[0], "hipconfig --version"
    return RocmInstall(found.kind, Path(found.path), version, source)


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
    if rocm.kind == "distribution":  # a distribution package: the system library folder itself
        return LibraryDirs(
            rocblas=f"{base}/rocblas/library",
            hipblaslt=f"{base}/hipblaslt/library",
            miopen_dir=base,
            miopen_glob="libMIOpen.so*",
            hip_dir=base,
            hip_glob="libamdhip64.so*",
        )
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
