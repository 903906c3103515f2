"""The host's HIP/ROCm version, found the same way for every command (run, plan, doctor, releases).

Looked for, in order (the first that gives a version wins):

* Linux: ``$ROCM_PATH``, ``$HIP_PATH``, ``/opt/rocm``, ``/opt/rocm-X.Y.Z`` (newest first): HIP's own
  version from ``include/hip/hip_version.h`` or the real file name of ``lib/libamdhip64.so.N.M.P``,
  else the package number (``.info/version``, the folder name): AMD's ROCm 10.0.0 (2026-08-26)
  numbers its packages 10.x while its HIP is 7.x (sources: the manifest's ``native_rocm.source``, listed
  on docs/compatibility.md), so the package number is HIP's only
  where nothing of HIP's own says otherwise; then distribution packages: a
  ``libamdhip64.so.N.M.P`` in the system library folders (Debian's ``libamdhip64-5`` ships
  ``/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153``, i.e. HIP 5.2).
* Windows: ``%HIP_PATH%``, ``%HIP_PATH_NN%``, ``%ProgramFiles%\\AMD\\ROCm\\X.Y`` (newest first):
  the SDK's ``include\\hip\\hip_version.h`` or ``bin\\amdhip64_N.dll``, else the package number from
  the folder name (the HIP SDK installs into ``ROCm\\6.2``) or ``HIP_PATH_62``.

:func:`folder_version` is the one reader of a folder's version (the HIP SDK checks use it too); the
package number is kept beside HIP's (``HostHip.package``) and shown where they differ.

Nothing is executed and nothing is loaded: only names and small text files are read, so a
broken driver cannot hang it. ``root`` maps every absolute host path under a fake root for tests.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath

from zluda_runner.core.serial import JsonMixin
from zluda_runner.host.fs import HostFs

SYSTEM_LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/lib64",
    "/usr/lib",
    "/usr/local/lib",
)
_LIB_RE = re.compile(r"^libamdhip64\.so\.(\d+)\.(\d+)(?:\.(\d+))?$")
_SONAME_RE = re.compile(r"^libamdhip64\.so\.(\d+)$")


@dataclass
class HostHip(JsonMixin):
    """A HIP/ROCm installation: ``kind`` is ``rocm`` (a ROCm folder), ``hip-sdk`` (Windows) or
    ``distribution`` (a distribution's libamdhip64 package); ``source`` says what gave the version."""

    kind: str
    path: str
    version: str | None
    source: str
    looked_at: list[str] = field(default_factory=list)
    package: str | None = None  # the package number where found (ROCm 10.0.0 with HIP 7.17)
    package_source: str | None = None

    @property
    def other_package(self) -> str | None:
        """The package number where it is not HIP's (``10.0.0`` beside HIP 7.17), else None."""
        same = not self.package or not self.version or _same_major_minor(self.version, self.package)
        return None if same else self.package

    def words(self) -> str:
        """``ROCm 6.2.4``, ``HIP SDK 6.4``, ``HIP 7.17 (ROCm 10.0.0)``: :func:`install_words`."""
        return install_words(self.kind, self.version, self.package, self.major_minor)

    @property
    def major_minor(self) -> str | None:
        """``"6.2"`` from ``"6.2.4"``; ``"5"`` when only the major is known; None when unknown."""
        if not self.version:
            return None
        m = re.match(r"(\d+)(?:\.(\d+))?", self.version)
        if not m:
            return None
        return f"{m.group(1)}.{m.group(2)}" if m.group(2) is not None else m.group(1)


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)) or (0,)


def _from_library_names(fs: HostFs, folder: str) -> tuple[str, str] | None:
    """``(version, how)`` from ``libamdhip64.so.N.M.P`` in ``folder`` (the highest major wins)."""
    names = fs.names(folder)
    real = [(m, n) for n in names if (m := _LIB_RE.match(n))]
    if real:
        m, name = max(real, key=lambda item: tuple(int(g or 0) for g in item[0].groups()))
        return f"{m.group(1)}.{m.group(2)}" + (f".{m.group(3)}" if m.group(3) else ""), f"{folder}/{name}"
    for name in reversed(names):
        sm = _SONAME_RE.match(name)
        if not sm:
            continue
        target = fs.readlink_name(folder, name)
        tm = _LIB_RE.match(target or "")
        if tm:
            return f"{tm.group(1)}.{tm.group(2)}", f"{folder}/{name} -> {target}"
        return sm.group(1), f"{folder}/{name} (major only)"
    return None


def _header_version(fs: HostFs, path: str) -> tuple[str, str] | None:
    """HIP's own ``major.minor`` from a ``hip_version.h`` (``HIP_VERSION_PATCH`` is a build number)."""
    header = fs.read_small(path)
    major = re.search(r"#define\s+HIP_VERSION_MAJOR\s+(\d+)", header or "")
    minor = re.search(r"#define\s+HIP_VERSION_MINOR\s+(\d+)", header or "")
    return (f"{major.group(1)}.{minor.group(1)}", path) if major and minor else None


def _windows_runtime(fs: HostFs, folder: str) -> tuple[str, str] | None:
    """The major of the SDK's own runtime, ``bin\\amdhip64_N.dll`` (the highest N)."""
    found = [(int(m.group(1)), n) for n in fs.names(f"{folder}\\bin")
             if (m := re.fullmatch(r"amdhip64_(\d+)\.dll", n, re.IGNORECASE))]
    if not found:
        return None
    major, name = max(found)
    return str(major), f"{folder}\\bin\\{name} (major only)"


def _package_number(fs: HostFs, folder: str, windows: bool, how: str) -> tuple[str, str] | None:
    """The package's number: ROCm's ``.info/version``, a ``rocm-X.Y.Z`` folder, the SDK's ``ROCm\\6.4``
    folder or its installer's ``HIP_PATH_64`` name (AMD numbers ROCm 10.0.0's packages 10.x, its HIP 7.x)."""
    if windows:
        m = re.match(r"(\d+\.\d+)", PureWindowsPath(folder.rstrip("\\/")).name)
        if m:
            return m.group(1), f"folder name ({how})"
        vm = re.fullmatch(r"HIP_PATH_(\d)(\d+)", how)
        return (f"{vm.group(1)}.{vm.group(2)}", how) if vm else None
    text = (fs.read_small(f"{folder}/.info/version") or "").strip()
    first = text.splitlines()[0].strip() if text else ""
    if re.match(r"\d+\.\d+", first):  # as written, e.g. "6.2.0-66"
        return first[:64], f"{folder}/.info/version"
    m = re.search(r"rocm-(\d+\.\d+(?:\.\d+)?)$", folder.rstrip("/"))
    return (m.group(1), f"folder name {folder}") if m else None


@dataclass(frozen=True)
class FolderVersion:
    """HIP's own version in a ROCm / HIP SDK folder (``version``, read from ``source``) and the package
    number beside it (``package``: ``.info/version``, the folder name), which is HIP's where they agree."""

    version: str | None
    source: str
    package: str | None = None
    package_source: str | None = None


def folder_version(fs: HostFs, folder: str, *, windows: bool = False, how: str = "") -> FolderVersion | None:
    """HIP's version in ``folder``, its own first: ``include/hip/hip_version.h``, then the runtime's file
    (``lib/libamdhip64.so.N.M.P``, ``bin\\amdhip64_N.dll``), then the package number (ROCm 10.0.0 holds
    HIP 7.17: the package number alone would read it as HIP 10.0). ``how``: the variable that named it."""
    sep = "\\" if windows else "/"
    own = _header_version(fs, f"{folder}{sep}include{sep}hip{sep}hip_version.h")
    if own is None and windows:
        own = _windows_runtime(fs, folder)
    for sub in () if own is not None or windows else ("lib", "lib64"):
        own = own or _from_library_names(fs, f"{folder}/{sub}")
    package = _package_number(fs, folder, windows, how)
    if own is None:
        return FolderVersion(package[0], package[1]) if package else None
    if package is None or not _same_major_minor(own[0], package[0]):
        return FolderVersion(own[0], own[1], *(package or (None, None)))
    # the same number: the package's is more precise ("6.2.4-120", the SDK's "7.1" beside amdhip64_7.dll)
    return FolderVersion(package[0], package[1] if "major only" in own[1] else own[1], *package)


def _same_major_minor(a: str, b: str) -> bool:
    ma, mb = re.match(r"(\d+)(?:\.(\d+))?", a), re.match(r"(\d+)(?:\.(\d+))?", b)
    if not ma or not mb or ma.group(1) != mb.group(1):
        return False
    return ma.group(2) is None or mb.group(2) is None or ma.group(2) == mb.group(2)


def install_words(kind: str, version: str | None, package: str | None, major_minor: str | None = None) -> str:
    """``ROCm 6.2.4``, ``HIP SDK 6.4``, and where the package number is not HIP's, both: ``HIP 7.17
    (ROCm 10.0.0)`` (one wording for every view)."""
    label = {"hip-sdk": "HIP SDK", "distribution": "distribution HIP"}.get(kind, "ROCm")
    if package and version and not _same_major_minor(version, package):
        return f"HIP {major_minor or version} ({label} {package})"
    return f"{label} {version or '(version unknown)'}"


def _found(kind: str, path: str, found: FolderVersion, looked: list[str]) -> HostHip:
    return HostHip(kind, path, found.version, found.source, looked, found.package, found.package_source)


def linux_rocm_folders(fs: HostFs, env: Mapping[str, str]) -> list[str]:
    """The ROCm folders looked at, in the order HIP is looked for: ``$ROCM_PATH``, ``$HIP_PATH``,
    ``/opt/rocm``, ``/opt/rocm-X.Y.Z`` (newest first)."""
    candidates: list[str] = [folder for folder, _var in _named_by_variables(env, "linux")]
    candidates.append("/opt/rocm")
    opt = [n for n in fs.names("/opt") if n.startswith("rocm-")]
    versioned = sorted(opt, key=lambda n: _version_key(n[5:]), reverse=True)
    candidates.extend(f"/opt/{n}" for n in versioned)
    return list(dict.fromkeys(candidates))


def _find_linux(fs: HostFs, env: Mapping[str, str], looked: list[str]) -> HostHip | None:
    unknown: HostHip | None = None
    for cand in linux_rocm_folders(fs, env):
        looked.append(cand)
        if not fs.is_dir(cand):
            continue
        found = folder_version(fs, cand)
        if found:
            return _found("rocm", cand, found, looked)
        unknown = unknown or HostHip("rocm", cand, None, "ROCm folder without a readable version", looked)
    for folder in SYSTEM_LIBRARY_DIRS:
        looked.append(folder)
        lib = _from_library_names(fs, folder)
        if lib:
            return HostHip("distribution", folder, lib[0], lib[1], looked)
    return unknown


def _named_by_variables(env: Mapping[str, str], platform: str) -> list[tuple[str, str]]:
    """(folder, variable) of each variable that names a HIP install, in the order they are looked at:
    ``HIP_PATH`` then ``HIP_PATH_NN`` (newest first) on Windows, ``ROCM_PATH`` then ``HIP_PATH`` on Linux.
    An empty variable names nothing."""
    if platform != "win32":
        return [(env[v], v) for v in ("ROCM_PATH", "HIP_PATH") if env.get(v)]
    paths = [(env["HIP_PATH"], "HIP_PATH")] if env.get("HIP_PATH") else []
    for var in sorted((k for k in env if re.fullmatch(r"HIP_PATH_\d+", k)), key=_version_key, reverse=True):
        if env[var]:
            paths.append((env[var], var))
    return paths


def gone_hip_folders(root: Path | None = None, env: Mapping[str, str] | None = None,
                     platform: str | None = None) -> list[tuple[str, str]]:
    """(variable, folder) of each HIP variable (:func:`find_host_hip` reads them first) naming a folder that
    does not exist: an uninstalled HIP SDK leaves ``HIP_PATH`` behind. Said where no HIP is found, so the
    user reads "HIP_PATH names a missing folder", not that none is set."""
    fs = HostFs(root)
    environ = os.environ if env is None else env
    return [(var, folder) for folder, var in _named_by_variables(environ, platform or sys.platform)
            if not fs.is_dir(folder)]


def gone_words(gone: Sequence[tuple[str, str]]) -> str:
    """``HIP_PATH names C:\\...\\6.4, which does not exist`` (one wording: doctor, plan, run)."""
    return "; ".join(f"{var} names {folder}, which does not exist" for var, folder in gone)


def _find_windows(fs: HostFs, env: Mapping[str, str], looked: list[str]) -> HostHip | None:
    paths = _named_by_variables(env, "win32")
    program_files = env.get("ProgramFiles", r"C:\Program Files")
    base = f"{program_files}\\AMD\\ROCm"
    for name in sorted(fs.names(base), key=_version_key, reverse=True):
        paths.append((f"{base}\\{name}", "Program Files"))
    for raw, how in paths:
        looked.append(raw)
        if not fs.is_dir(raw):
            continue
        found = folder_version(fs, raw.rstrip("\\/"), windows=True, how=how)
        if found:
            return _found("hip-sdk", raw, found, looked)
        return HostHip("hip-sdk", raw, None, f"{how} (version not in the folder name)", looked)
    return None


def find_host_hip(
    root: Path | None = None, env: Mapping[str, str] | None = None, platform: str | None = None
) -> HostHip | None:
    """The host's HIP/ROCm installation, or None when none is found.

    ``root``: a fake root every absolute path is mapped under (tests); ``env``: the environment
    (default: this process's); ``platform``: ``sys.platform`` style (``linux``, ``win32``).
    """
    fs = HostFs(root)
    environ = os.environ if env is None else env
    plat = platform or sys.platform
    looked: list[str] = []
    if plat == "win32":
        return _find_windows(fs, environ, looked)
    return _find_linux(fs, environ, looked)


def host_hip_version(
    root: Path | None = None, env: Mapping[str, str] | None = None, platform: str | None = None
) -> str | None:
    """The host's HIP version as ``"X.Y"`` (``"5"`` when only the major is known), or None."""
    found = find_host_hip(root, env, platform)
    return found.major_minor if found else None
