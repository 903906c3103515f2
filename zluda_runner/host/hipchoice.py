"""Which HIP a run uses where several are installed, as one choice: every ROCm folder (Linux:
``$ROCM_PATH``, ``/opt/rocm``, ``/opt/rocm-X.Y.Z``) or HIP SDK (Windows: ``HIP_PATH``, ``HIP_PATH_NN``,
``Program Files\\AMD\\ROCm\\X.Y``: :func:`zluda_runner.host.hipsdk.find_sdks`) with its version, the one
the run uses by default marked (:func:`~zluda_runner.host.hipversion.find_host_hip`'s pick), and the
environment of a run that takes another one (:func:`chosen_env`).

Choosing is setting what the HIP finder and the workload's loader read first, nothing else:

* Linux: ``ROCM_PATH`` (and ``HIP_PATH`` where set) names the folder, and its ``lib`` goes first on
  ``LD_LIBRARY_PATH``: ld.so takes ``LD_LIBRARY_PATH`` before ld.so.cache, where AMD's packages list
  ``/opt/rocm/lib`` (the newest), so the variable alone would leave the workload on another ROCm.
* Windows: ``HIP_PATH`` names the folder (the variable ZLUDA and the HIP SDK's tools read; the finder
  takes it first) and its ``bin`` goes first on ``PATH`` (the HIP SDK's DLLs are not in System32: a
  ``PATH`` entry of another SDK would otherwise win).

Read under ``ZLUDA_RUNNER_ROOT`` like every host reader; bounded by the finders it uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from zluda_runner.core.serial import JsonMixin
from zluda_runner.host.fs import HostFs
from zluda_runner.host.hipversion import find_host_hip, folder_version, install_words, linux_rocm_folders
from zluda_runner.host.libraries import windows_variable

MAX_INSTALLS = 16


@dataclass(frozen=True)
class HipInstall(JsonMixin):
    """One ROCm folder or HIP SDK: where, HIP's version there and where that was read, and whether it is
    the one a run takes by default."""

    path: str
    version: str | None
    source: str
    kind: str  # "rocm" | "hip-sdk"
    used: bool = False
    package: str | None = None

    def words(self) -> str:
        """``ROCm 6.2.0 at /opt/rocm-6.2.0``, ``HIP SDK 6.2 at C:\\...``"""
        return f"{install_words(self.kind, self.version, self.package)} at {self.path}"


def _major_minor(version: str | None) -> str | None:
    parts = (version or "").split(".")
    return ".".join(parts[:2]) if parts[0].isdigit() else None


def _linux(fs: HostFs, env: Mapping[str, str]) -> list[HipInstall]:
    used = find_host_hip(fs.root, env, "linux")
    out: list[HipInstall] = []
    seen: set[Path] = set()
    for folder in linux_rocm_folders(fs, env):
        if not fs.is_dir(folder):
            continue
        real = fs.path(folder).resolve()  # /opt/rocm is a link to /opt/rocm-X.Y.Z: one install
        if real in seen:
            continue
        seen.add(real)
        found = folder_version(fs, folder)
        is_used = used is not None and used.kind == "rocm" and fs.path(used.path).resolve() == real
        out.append(HipInstall(folder, found.version if found else None,
                              found.source if found else "no readable version", "rocm", is_used,
                              found.package if found else None))
    return out


def _windows(fs: HostFs, env: Mapping[str, str]) -> list[HipInstall]:
    from zluda_runner.host.hipsdk import find_sdks

    return [HipInstall(s.path, s.version, s.version_source, "hip-sdk", s.used, s.package)
            for s in find_sdks(fs.root, env) if s.exists]


def installed_hips(root: Path | None, env: Mapping[str, str], platform: str) -> tuple[HipInstall, ...]:
    """Every ROCm folder (Linux) or HIP SDK (Windows) of this host, in the finder's order, the one a run
    in ``env`` takes marked ``used``."""
    fs = HostFs(root)
    found = _windows(fs, env) if platform == "win32" else _linux(fs, env) if platform.startswith("linux") \
        else []
    return tuple(found[:MAX_INSTALLS])


def other_hips(root: Path | None, env: Mapping[str, str], platform: str) -> tuple[HipInstall, ...]:
    """The installs of another HIP version than the one a run in ``env`` takes (one per version, the
    finder's first): what ``find`` tries as "the other HIP SDK"."""
    installs = installed_hips(root, env, platform)
    used = next((i for i in installs if i.used), None)
    taken = {_major_minor(used.version)} if used is not None else set()
    out = []
    for install in installs:
        version = _major_minor(install.version)
        if install.used or version is None or version in taken:
            continue
        taken.add(version)
        out.append(install)
    return tuple(out)


def chosen_env(env: Mapping[str, str], folder: str, platform: str) -> dict[str, str]:
    """``env`` of a run that takes the HIP in ``folder`` (module doc); the same when applied twice."""
    out = dict(env)
    if platform == "win32":
        clean = folder.rstrip("\\/")
        out[next((k for k in out if k.upper() == "HIP_PATH"), "HIP_PATH")] = clean
        key = next((k for k in out if k.upper() == "PATH"), "PATH")
        first = str(PureWindowsPath(clean) / "bin")
        rest = [p for p in (windows_variable(out, "PATH") or "").split(";")
                if p and p.rstrip("\\/").lower() != first.lower()]
        out[key] = ";".join([first, *rest])
        return out
    clean = folder.rstrip("/") or "/"
    out["ROCM_PATH"] = clean
    if out.get("HIP_PATH"):
        out["HIP_PATH"] = clean
    first = f"{clean}/lib"
    rest = [p for p in out.get("LD_LIBRARY_PATH", "").split(":") if p and p.rstrip("/") != first]
    out["LD_LIBRARY_PATH"] = ":".join([first, *rest])
    return out
