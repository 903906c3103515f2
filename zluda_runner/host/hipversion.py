"""The host's HIP/ROCm version, found the same way for every command (run, plan, doctor, releases).

Looked for, in order (the first that gives a version wins):

* Linux: ``$ROCM_PATH``, ``$HIP_PATH``, ``/opt/rocm``, ``/opt/rocm-X.Y.Z`` (newest first): the
  version from ``.info/version``, ``include/hip/hip_version.h``, the real file name of
  ``lib/libamdhip64.so.N.M.P``, or the folder name; then distribution packages: a
  ``libamdhip64.so.N.M.P`` in the system library folders (Debian's ``libamdhip64-5`` ships
  ``/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153``, i.e. HIP 5.2).
* Windows: ``%HIP_PATH%``, ``%HIP_PATH_NN%``, ``%ProgramFiles%\\AMD\\ROCm\\X.Y`` (newest first),
  the version from the folder name (the HIP SDK installs into ``ROCm\\6.2``) or ``HIP_PATH_62``.

Nothing is executed and nothing is loaded: only names and small text files are read, so a
broken driver cannot hang it. ``root`` maps every absolute host path under a fake root for tests.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
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


def _rocm_folder_version(fs: HostFs, folder: str) -> tuple[str, str] | None:
    text = fs.read_small(f"{folder}/.info/version")
    if text and text.strip():
        first = text.strip().splitlines()[0].strip()
        if re.match(r"\d+\.\d+", first):  # as written, e.g. "6.2.0-66"
            return first[:64], f"{folder}/.info/version"
    header = fs.read_small(f"{folder}/include/hip/hip_version.h")
    if header:
        major = re.search(r"#define\s+HIP_VERSION_MAJOR\s+(\d+)", header)
        minor = re.search(r"#define\s+HIP_VERSION_MINOR\s+(\d+)", header)
        if major and minor:
            return f"{major.group(1)}.{minor.group(1)}", f"{folder}/include/hip/hip_version.h"
    for sub in ("lib", "lib64"):
        found = _from_library_names(fs, f"{folder}/{sub}")
        if found:
            return found
    m = re.search(r"rocm-(\d+\.\d+(?:\.\d+)?)$", folder.rstrip("/"))
    if m:
        return m.group(1), f"folder name {folder}"
    return None


def _find_linux(fs: HostFs, env: Mapping[str, str], looked: list[str]) -> HostHip | None:
    candidates: list[str] = [env[v] for v in ("ROCM_PATH", "HIP_PATH") if env.get(v)]
    candidates.append("/opt/rocm")
    opt = [n for n in fs.names("/opt") if n.startswith("rocm-")]
    versioned = sorted(opt, key=lambda n: _version_key(n[5:]), reverse=True)
    candidates.extend(f"/opt/{n}" for n in versioned)
    unknown: HostHip | None = None
    for cand in dict.fromkeys(candidates):
        looked.append(cand)
        if not fs.is_dir(cand):
            continue
        found = _rocm_folder_version(fs, cand)
        if found:
            return HostHip("rocm", cand, found[0], found[1], looked)
        unknown = unknown or HostHip("rocm", cand, None, "ROCm folder without a readable version", looked)
    for folder in SYSTEM_LIBRARY_DIRS:
        looked.append(folder)
        found = _from_library_names(fs, folder)
        if found:
            return HostHip("distribution", folder, found[0], found[1], looked)
    return unknown


def _find_windows(fs: HostFs, env: Mapping[str, str], looked: list[str]) -> HostHip | None:
    paths: list[tuple[str, str]] = []
    if env.get("HIP_PATH"):
        paths.append((env["HIP_PATH"], "HIP_PATH"))
    for var in sorted((k for k in env if re.fullmatch(r"HIP_PATH_\d+", k)), key=_version_key, reverse=True):
        paths.append((env[var], var))
    program_files = env.get("ProgramFiles", r"C:\Program Files")
    base = f"{program_files}\\AMD\\ROCm"
    for name in sorted(fs.names(base), key=_version_key, reverse=True):
        paths.append((f"{base}\\{name}", "Program Files"))
    for raw, how in paths:
        looked.append(raw)
        if not fs.is_dir(raw):
            continue
        folder_name = PureWindowsPath(raw.rstrip("\\/")).name
        m = re.match(r"(\d+\.\d+)", folder_name)
        if m:
            return HostHip("hip-sdk", raw, m.group(1), f"folder name ({how})", looked)
        vm = re.fullmatch(r"HIP_PATH_(\d)(\d+)", how)
        if vm:
            return HostHip("hip-sdk", raw, f"{vm.group(1)}.{vm.group(2)}", how, looked)
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
