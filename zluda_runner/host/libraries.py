"""Where the loader takes each host library ZLUDA loads from, for one launch: the one answer the plan's
dependency checks, the defaults and the doctor read (MIOpen, rocBLAS, hipBLASLt, rocFFT, rocSPARSE, HIP).

* Linux: glibc's ld.so as :class:`~zluda_runner.loader.glibc.LoaderModel` decides (the requester's
  RPATH/RUNPATH, the launch's ``LD_LIBRARY_PATH``, ld.so.cache, the default folders); then ROCm's own
  folders (``$ROCM_PATH``, ``$HIP_PATH``, ``/opt/rocm``, ``/opt/rocm-*``: lib, lib64), which the loader
  does not search: zluda-run puts the folder on ``LD_LIBRARY_PATH`` after the link folder.
* Windows: a plain ``LoadLibraryW``'s folders (:mod:`zluda_runner.loader.windows`): System32, the Windows
  folder, the launch's ``PATH``; then the HIP SDK's ``bin`` folders (``HIP_PATH``, ``HIP_PATH_NN``), which
  the SDK installer does not put on ``PATH``.

Under a fake root (``ZLUDA_RUNNER_ROOT``, ``doctor --root``) every host path maps under it, as for every
host reader; :attr:`HostLibrary.real` is then the file on this machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from zluda_runner.binfmt.elf import ElfInfo, peek_elf_header
from zluda_runner.core.serial import JsonMixin
from zluda_runner.host.fs import HostFs
from zluda_runner.host.hipversion import linux_rocm_folders
from zluda_runner.loader.glibc import (
    DEBIAN_DEFAULT_DIRS,
    FEDORA_DEFAULT_DIRS,
    LoaderEnv,
    LoaderModel,
    split_search_path,
)
from zluda_runner.loader.hostinfo import LD_SO_CACHE, read_ld_so_cache

#: the names ZLUDA's shims load each library by (upstream v6 patches DT_NEEDED to the unversioned names)
LINUX_NAMES = {"hip": "libamdhip64.so", "rocblas": "librocblas.so", "hipblaslt": "libhipblaslt.so",
               "miopen": "libMIOpen.so.1", "rocfft": "librocfft.so", "rocsparse": "librocsparse.so"}
WINDOWS_NAMES = {"rocblas": "rocblas.dll", "hipblaslt": "hipblaslt.dll", "miopen": "MIOpen.dll",
                 "rocfft": "rocfft.dll", "rocsparse": "rocsparse.dll"}
# how a library was found: the loader of the launch takes it from there as it is
LOADER_HOWS = ("rpath", "runpath", "LD_LIBRARY_PATH", "ld.so.cache", "default folders", "System32",
               "Windows folder", "PATH")
ROCM_FOLDER, HIP_SDK_BIN, NOT_FOUND = "ROCm folder", "HIP SDK bin", "not found"
_VIA = {"rpath": "rpath", "runpath": "runpath", "ld_library_path": "LD_LIBRARY_PATH",
        "ld.so.cache": "ld.so.cache", "default": "default folders"}
_HIP_VAR = re.compile(r"^HIP_PATH(?:_\d+)?$", re.IGNORECASE)


@dataclass(frozen=True)
class HostLibrary(JsonMixin):
    """One library as the launch's loader finds it."""

    name: str  # the file name asked for (libMIOpen.so.1, MIOpen.dll)
    path: str | None  # the host path it is taken from; None: found nowhere
    how: str  # one of LOADER_HOWS, ROCM_FOLDER, HIP_SDK_BIN or NOT_FOUND
    looked: tuple[str, ...]  # the folders looked into, in order ("ld.so.cache" for the cache)
    real: str | None = None  # the file on this machine (the path under a fake root)

    @property
    def found(self) -> bool:
        return self.path is not None

    @property
    def loads_as_is(self) -> bool:
        """The launch's own loader takes it, with no folder added to its path."""
        return self.path is not None and self.how in LOADER_HOWS and self.real == self.path

    def searched(self) -> str:
        return f"{self.name} in {', '.join(self.looked) or 'no folder'}"

    def folder(self) -> str | None:
        """The folder it is in (host path style), None when not found."""
        return None if self.path is None else _parent(self.path)


def library_name(what: str, platform: str) -> str:
    """The file name ZLUDA loads ``what`` (a key of :data:`LINUX_NAMES`) by on ``platform``."""
    return (WINDOWS_NAMES if platform == "win32" else LINUX_NAMES)[what]


def kernel_folder(library: str, kind: str) -> str:
    """Where a math library at ``library`` reads its GPU kernels: ``<its folder>/<kind>/library`` (rocBLAS's
    Tensile files, hipBLASLt's), in the library's own path style."""
    return _join(_join(_parent(library), kind), "library")


def _windows_style(path: str) -> bool:
    return "\\" in path or re.match(r"^[A-Za-z]:", path) is not None


def _join(folder: str, name: str) -> str:
    """``folder``/``name`` in the folder's own path style (a Windows path off Windows keeps ``\\``)."""
    return f"{folder.rstrip(chr(92))}\\{name}" if _windows_style(folder) else os.path.join(folder, name)


def _parent(path: str) -> str:
    return str(PureWindowsPath(path).parent) if _windows_style(path) else os.path.dirname(path)


def files_for_gfx(fs: HostFs, folder: str, gfx: str, prefix: str = "") -> list[str]:
    """Names of files in ``folder`` built for exactly ``gfx`` (``gfx1030`` does not match ``gfx10300``)."""
    pattern = re.compile(re.escape(gfx) + r"(?![0-9a-f])")
    return [p.name for p in fs.glob(folder, f"{prefix}*") if pattern.search(p.name)]


# --------------------------------------------------------------------------- Linux


def rocm_dirs(env: Mapping[str, str], fs: HostFs | None = None) -> list[str]:
    """ROCm's usual library folders (host paths) that exist, in the order they are tried: the order HIP
    is looked for (:func:`~zluda_runner.host.hipversion.linux_rocm_folders`: ``$ROCM_PATH``, ``$HIP_PATH``,
    ``/opt/rocm``, ``/opt/rocm-X.Y.Z`` newest first)."""
    fs = fs or HostFs()
    out: list[str] = []
    for base in linux_rocm_folders(fs, env):  # the HIP finder's order: the HIP reported is the one taken
        for sub in ("lib", "lib64") if base else ():
            cand = f"{str(base).rstrip('/')}/{sub}"
            if fs.is_dir(cand) and cand not in out:
                out.append(cand)
    return out


def launch_loader_env(env: Mapping[str, str], fs: HostFs | None = None) -> LoaderEnv:
    """The loader set-up of a launch with ``env``: this machine's (ld.so.cache, the interpreter's folders),
    or, under a fake root, the root's (its ``etc/ld.so.cache``, the usual default folders), paths mapped."""
    fs = fs or HostFs()
    if fs.root is None:
        loader = LoaderEnv.from_host(env)
        loader.preload, loader.audit = [], []
        return loader
    cache_file = fs.path(LD_SO_CACHE)
    cache = read_ld_so_cache(str(cache_file)) if cache_file.is_file() else {}
    defaults = DEBIAN_DEFAULT_DIRS if fs.is_dir(DEBIAN_DEFAULT_DIRS[0]) else FEDORA_DEFAULT_DIRS
    lib_path = split_search_path(env.get("LD_LIBRARY_PATH", ""))
    return LoaderEnv(ld_library_path=[str(fs.path(d)) for d in lib_path],
                     ldcache={k: str(fs.path(v)) for k, v in cache.items()},
                     default_dirs=[str(fs.path(d)) for d in defaults])


def _host_path(fs: HostFs, real: str) -> str:
    if fs.root is None:
        return real
    try:
        return "/" + Path(real).relative_to(fs.root).as_posix()
    except ValueError:
        return real


def _no_requester() -> ElfInfo:
    """A dlopen from a program with no RPATH/RUNPATH of its own."""
    return ElfInfo(path="/", elf_class=64, machine="x86_64", elf_type="DYN")


def _header_only(path: Path) -> ElfInfo:
    """What finding a file needs of it (the header the loader checks; peek_elf_header has passed): a
    cached launch parses no dynamic section."""
    return ElfInfo(path=str(path), elf_class=64, machine="x86_64", elf_type="DYN")


def _find_linux(name: str, env: Mapping[str, str], fs: HostFs, loader: LoaderEnv | None,
                requester: ElfInfo | None) -> HostLibrary:
    loader = loader if loader is not None else launch_loader_env(env, fs)
    req = requester or _no_requester()
    res = LoaderModel(loader, reader=_header_only).resolve(name, req)
    looked = [*(f"LD_LIBRARY_PATH {_host_path(fs, d)}" for d in loader.ld_library_path), "ld.so.cache",
              *(_host_path(fs, d) for d in loader.default_dirs)]
    if res.found and res.path is not None:
        how = _VIA.get(res.via, res.via)
        return HostLibrary(name, _host_path(fs, res.path), how, tuple(looked), res.path)
    for folder in rocm_dirs(env, fs):
        looked.append(folder)
        real = str(fs.path(f"{folder}/{name}"))
        if peek_elf_header(real) == (64, "x86_64"):
            return HostLibrary(name, f"{folder}/{name}", ROCM_FOLDER, tuple(looked), real)
    return HostLibrary(name, None, NOT_FOUND, tuple(looked))


# --------------------------------------------------------------------------- Windows


def windows_variable(env: Mapping[str, str], key: str) -> str | None:
    """A variable of a Windows environment (names ignore case there)."""
    if key in env:
        return env[key]
    return next((v for k, v in env.items() if k.lower() == key.lower()), None)


def hip_sdk_bins(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(variable, its bin folder) of ``HIP_PATH`` then ``HIP_PATH_NN`` (newest first)."""
    hip = sorted(((k.upper(), v.strip().strip('"').rstrip("\\/")) for k, v in env.items()
                  if _HIP_VAR.match(k) and v.strip()),
                 key=lambda kv: (kv[0] != "HIP_PATH", [-int(x) for x in re.findall(r"\d+", kv[0])]))
    return [(k, _join(v, "bin")) for k, v in hip]


def windows_path(env: Mapping[str, str], path_prepend: Sequence[str] = ()) -> list[str]:
    """The launched process's ``PATH``: ``path_prepend``, then the environment's (``;``-separated)."""
    given = [p.strip().strip('"') for p in (windows_variable(env, "PATH") or "").split(";")]
    return list(dict.fromkeys([*path_prepend, *filter(None, given)]))


def _find_windows(name: str, env: Mapping[str, str], fs: HostFs, path_prepend: Sequence[str]) -> HostLibrary:
    system_root = windows_variable(env, "SystemRoot") or windows_variable(env, "windir") or r"C:\Windows"
    folders = [(_join(system_root, "System32"), "System32"), (system_root, "Windows folder"),
               *((p, "PATH") for p in windows_path(env, path_prepend)),
               *((b, HIP_SDK_BIN) for _v, b in hip_sdk_bins(env))]
    looked: list[str] = []
    for folder, how in folders:
        looked.append(folder)
        entry = next((n for n in fs.names(folder) if n.lower() == name.lower()), None)
        if entry is not None and fs.path(_join(folder, entry)).is_file():
            path = _join(folder, entry)
            return HostLibrary(name, path, how, tuple(looked), str(fs.path(path)))
    return HostLibrary(name, None, NOT_FOUND, tuple(looked))


def find_library(name: str, env: Mapping[str, str], platform: str, *, fs: HostFs | None = None,
                 loader: LoaderEnv | None = None, requester: ElfInfo | None = None,
                 path_prepend: Sequence[str] = ()) -> HostLibrary:
    """Where the launch with ``env`` takes the library file ``name`` from on ``platform`` (``linux``,
    ``win32``).

    ``loader``: the Linux loader set-up (default: :func:`launch_loader_env`); ``requester``: the object that
    needs it (its RPATH/RUNPATH apply; default a dlopen from a program with none); ``path_prepend``: the
    folders the launch puts first on a Windows ``PATH``."""
    host = fs or HostFs()
    if platform == "win32":
        return _find_windows(name, env, host, path_prepend)
    return _find_linux(name, env, host, loader, requester)


def find_first(names: Sequence[str], env: Mapping[str, str], platform: str, *,
               fs: HostFs | None = None) -> HostLibrary:
    """The first of ``names`` found (the HIP runtime's majors, newest first), else the last one's record."""
    found = [find_library(n, env, platform, fs=fs) for n in names]
    return next((f for f in found if f.found), found[-1])
