"""Where Windows takes a DLL from when torch loads its ``torch/lib`` DLLs.

torch's ``__init__`` (Windows) calls ``os.add_dll_directory`` for ``torch/lib``
(and the interpreter's ``Library/bin`` folders when they exist), then loads each
DLL with ``LoadLibraryExW(path, 0, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)``; Python loads extension modules the same way.
In that mode a dependency is looked up:

1. among modules already loaded in the process, by base name (case-insensitive);
2. in KnownDLLs (system DLLs the loader maps from its own section cache);
3. in the folder of the DLL being loaded (``LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR``);
4. in the application folder (where ``python.exe`` is);
5. in the ``add_dll_directory`` folders, in the order they were added;
6. in ``System32``.

``PATH`` and the current folder are not searched in this mode.  (torch falls
back to a plain ``LoadLibraryW`` only when the first attempt fails, which is the
case our model reports as not found.)

The driver is different. NVIDIA's cudart loads ``nvcuda.dll`` at run time in a
*restricted* search: measured under Wine 8 with the real ``cudart64_110.dll`` and
``cudart64_12.dll`` from PyPI's win_amd64 wheels, an ``nvcuda.dll`` in the
application folder is never loaded (``cudaGetDeviceCount`` returns 35), while one
already loaded under that base name is used. So a driver copied into torch/lib is
taken only because torch's ``__init__`` loads every ``torch/lib/*.dll`` first (its
*DLL loop*: :class:`TorchDllLoop`), and a program with no such loop needs an
injector or a preload (:meth:`DllSearchModel.resolve_restricted`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath

from zluda_runner.core.serial import JsonMixin
from zluda_runner.loader.glibc import Resolution

# Values of Resolution.via produced here.
VIA_LOADED = "already-loaded"
VIA_KNOWN = "known-dll"
VIA_API_SET = "api-set"
VIA_LOAD_DIR = "dll-load-dir"
VIA_APP_DIR = "app-dir"
VIA_USER_DIR = "user-dir"
VIA_SYSTEM32 = "system32"
VIA_NOT_FOUND = "not-found"
VIA_TORCH_LOOP = "torch-dll-loop"  # loaded early by torch's __init__, which loads every torch/lib/*.dll


@dataclass
class TorchDllLoop(JsonMixin):
    """Whether a torch's ``__init__.py`` loads every DLL in torch/lib at import (Windows), and how.

    Read from the target's own ``torch/__init__.py`` (the loop and its flags differ across
    versions). ``flags``: what ``LoadLibraryExW`` gets (0x1100 =
    ``LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR``); ``where``:
    ``__init__.py:LINE`` of the call."""

    present: bool
    flags: int | None = None
    where: str | None = None
    fallback_path: bool = False  # retries a failed DLL with plain LoadLibraryW and torch's folders on PATH

# HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\KnownDLLs on Windows 10/11.
KNOWN_DLLS = frozenset(
    {
        "advapi32.dll", "clbcatq.dll", "combase.dll", "comdlg32.dll", "coml2.dll", "difxapi.dll",
        "gdi32.dll", "gdiplus.dll", "imagehlp.dll", "imm32.dll", "kernel32.dll", "kernelbase.dll",
        "msctf.dll", "msvcrt.dll", "normaliz.dll", "nsi.dll", "ntdll.dll", "ole32.dll",
        "oleaut32.dll", "psapi.dll", "rpcrt4.dll", "sechost.dll", "setupapi.dll", "shcore.dll",
        "shell32.dll", "shlwapi.dll", "user32.dll", "wldap32.dll", "wow64.dll", "wow64cpu.dll",
        "wow64win.dll", "ws2_32.dll", "ucrtbase.dll",
    }
)

# DLLs every Windows installation has in System32, besides the KnownDLLs: used when
# the model runs away from Windows and has no System32 folder to look into.
SYSTEM32_DLLS = frozenset(
    {
        "bcrypt.dll", "cfgmgr32.dll", "crypt32.dll", "d3d11.dll", "d3d12.dll", "dbghelp.dll",
        "dxgi.dll", "iphlpapi.dll", "ncrypt.dll", "ntdll.dll", "opengl32.dll", "powrprof.dll",
        "secur32.dll", "shcore.dll", "userenv.dll", "uxtheme.dll", "version.dll", "winmm.dll",
        "wintrust.dll", "ws2_32.dll", "dwmapi.dll", "mswsock.dll", "dnsapi.dll", "winhttp.dll",
    }
)


# The Visual C++ runtime: in System32 wherever the redistributable torch requires is installed (and
# beside python.exe: CPython ships vcruntime140.dll and vcruntime140_1.dll).
VC_RUNTIME_DLLS = frozenset(
    {"vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll", "msvcp140_1.dll", "msvcp140_2.dll",
     "concrt140.dll", "vcomp140.dll"}
)


def is_api_set(name: str) -> bool:
    """An API set name (``api-ms-win-crt-runtime-l1-1-0.dll``): resolved by the loader, no file."""
    lowered = name.lower()
    return lowered.startswith(("api-ms-win-", "ext-ms-"))


@dataclass
class DllSearchModel:
    """The folders and modules a torch process on Windows resolves DLL names against.

    ``system32`` is the real folder when modelling the host itself; ``None`` when
    modelling a Windows tree from another OS, in which case only the DLLs in
    :data:`KNOWN_DLLS` / :data:`SYSTEM32_DLLS` (plus ``extra_system32``) count as there.
    ``loaded`` maps lower-cased base names of modules already in the process to their paths.
    """

    app_dir: Path | None = None
    user_dirs: list[Path] = field(default_factory=list)
    system32: Path | None = None
    extra_system32: frozenset[str] = frozenset()
    loaded: dict[str, str] = field(default_factory=dict)
    loop_loaded: dict[str, str] = field(default_factory=dict)  # torch/lib DLLs torch's DLL loop loads first
    _listing: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)

    @classmethod
    def for_torch(cls, torch_dir: Path, *, exec_prefix: Path | None = None,
                  system32: Path | None = None) -> DllSearchModel:
        """The model torch's ``__init__`` sets up: ``torch/lib`` and ``<prefix>/Library/bin``."""
        user_dirs = [torch_dir / "lib"]
        app_dir = None
        if exec_prefix is not None:
            app_dir = exec_prefix
            for extra in (exec_prefix / "Library" / "bin", exec_prefix / "bin"):
                if extra.is_dir():
                    user_dirs.append(extra)
        if system32 is None and sys.platform == "win32":
            system32 = Path(os.environ.get("SYSTEMROOT", r"C:\Windows")) / "System32"
        return cls(app_dir=app_dir, user_dirs=user_dirs, system32=system32)

    def _find_in(self, folder: Path, name: str) -> str | None:
        """Case-insensitive lookup of ``name`` in ``folder`` (Windows file names ignore case)."""
        key = str(folder)
        listing = self._listing.get(key)
        if listing is None:
            try:
                listing = {entry.lower(): entry for entry in os.listdir(folder)}
            except OSError:
                listing = {}
            self._listing[key] = listing
        found = listing.get(name.lower())
        return str(folder / found) if found else None

    def resolve(self, name: str, requester: Path | str | None) -> Resolution:
        """Where ``name``, imported by ``requester`` (a DLL path), is taken from."""
        tried: list[str] = []
        lowered = PureWindowsPath(name).name.lower()
        if lowered in self.loaded:
            return Resolution(name=name, path=self.loaded[lowered], via=VIA_LOADED,
                              via_object=None, tried=tried)
        if is_api_set(lowered):
            return Resolution(name=name, path=None, via=VIA_API_SET, via_object=None, tried=tried)
        if lowered in KNOWN_DLLS:
            return Resolution(name=name, path=self._system_path(name), via=VIA_KNOWN,
                              via_object=None, tried=tried)
        steps: list[tuple[str, Path, str | None]] = []
        if requester is not None:
            steps.append((VIA_LOAD_DIR, Path(requester).parent, Path(requester).name))
        if self.app_dir is not None:
            steps.append((VIA_APP_DIR, self.app_dir, None))
        steps.extend((VIA_USER_DIR, folder, None) for folder in self.user_dirs)
        if self.system32 is not None:
            steps.append((VIA_SYSTEM32, self.system32, None))
        for via, folder, via_object in steps:
            candidate = str(folder / name)
            tried.append(candidate)
            found = self._find_in(folder, name)
            if found:
                return Resolution(name=name, path=found, via=via, via_object=via_object, tried=tried)
        if self.system32 is None and (lowered in SYSTEM32_DLLS or lowered in self.extra_system32):
            return Resolution(name=name, path=self._system_path(name), via=VIA_SYSTEM32,
                              via_object=None, tried=tried)
        return Resolution(name=name, path=None, via=VIA_NOT_FOUND, via_object=None, tried=tried)

    def resolve_restricted(self, name: str) -> Resolution:
        """Where cudart's run-time load of ``name`` (the driver) is served from: a module already
        in the process (loaded before, or by torch's DLL loop), else System32; never the
        application folder, torch/lib or PATH (measured under Wine, see the module doc)."""
        lowered = PureWindowsPath(name).name.lower()
        if lowered in self.loaded:
            return Resolution(name=name, path=self.loaded[lowered], via=VIA_LOADED, via_object=None, tried=[])
        if lowered in self.loop_loaded:
            return Resolution(name=name, path=self.loop_loaded[lowered], via=VIA_TORCH_LOOP,
                              via_object=None, tried=[])
        if self.system32 is not None:
            tried = [str(self.system32 / name)]
            found = self._find_in(self.system32, name)
            if found:
                return Resolution(name=name, path=found, via=VIA_SYSTEM32, via_object=None, tried=tried)
            return Resolution(name=name, path=None, via=VIA_NOT_FOUND, via_object=None, tried=tried)
        if lowered in KNOWN_DLLS or lowered in SYSTEM32_DLLS or lowered in self.extra_system32:
            return Resolution(name=name, path=self._system_path(name), via=VIA_SYSTEM32, via_object=None,
                              tried=[])
        return Resolution(name=name, path=None, via=VIA_NOT_FOUND, via_object=None, tried=[])

    def _system_path(self, name: str) -> str:
        if self.system32 is not None:
            return str(self.system32 / name)
        return str(PureWindowsPath(r"C:\Windows\System32") / name)
