"""Which files Windows will not let us replace or delete now, and which processes hold them (ctypes).

Imported only on Windows, by :mod:`zluda_runner.core.replace` (the seam),
so Linux never loads it; its records are in :mod:`zluda_runner.core.errors`.

Measured under Wine 8.0 (Debian 12) with the official CPython 3.13.2, a second ``python.exe``
holding ``held.dll`` (``tests/windows/test_wine_files.py`` keeps these true):

============================================  ==================================  ================
operation on ``held.dll``                      loaded by ``ctypes.WinDLL``         ``open(.., "rb")``
============================================  ==================================  ================
open for reading                               works                               works
open for writing (``r+b``, ``wb``)             PermissionError errno 13            works
``os.remove``                                  WinError 5 (access denied)          WinError 32
``os.rename`` to a sibling name                works                               WinError 32
``os.rename`` of its folder                    works                               works
``os.replace(other, held)``                    WinError 5, naming *other*          WinError 5
rename aside, then ``os.replace`` the old name works (the holder keeps the aside)  --
``shutil.rmtree`` of its folder                stops at it: a half-deleted tree    the same
``CreateFileW(GENERIC_WRITE|DELETE, share      WinError 32 (sharing violation)     WinError 32
all)`` -- the probe used here
============================================  ==================================  ================

So a rename succeeds where the delete that must follow it fails: a rename proves nothing, and
only a probe of every file *before* anything changes keeps a multi-file change whole. The probe
opens each file with write and delete access while sharing everything: it fails exactly when
another process has the file mapped as an image (a loaded DLL/EXE) or open without sharing
write or delete, and it leaves the file untouched.

Who holds it: the Restart Manager (``rstrtmgr.dll``) answers on Windows; under Wine 8.0 it is a
stub (``RmStartSession`` gives a dummy session, ``RmGetList`` succeeds with no process), so
when it names nobody the process list is read with psapi (``EnumProcesses``,
``EnumProcessModulesEx``, ``GetModuleFileNameExW``), which finds every process that has the file
*loaded* (works under Wine, and on Windows for the user's own processes). A file merely held
open by a process is then not attributed: the message says so.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from ctypes import wintypes
from pathlib import Path
from typing import Any

from zluda_runner.core.errors import IN_USE, InUse

ERROR_FILE_NOT_FOUND = 2
ERROR_PATH_NOT_FOUND = 3
ERROR_ACCESS_DENIED = 5
ERROR_SHARING_VIOLATION = 32
ERROR_LOCK_VIOLATION = 33
_GENERIC_WRITE = 0x40000000
_DELETE = 0x00010000
_SHARE_ALL = 0x1 | 0x2 | 0x4  # FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE
_OPEN_EXISTING = 3
_INVALID_HANDLE = wintypes.HANDLE(-1).value
_PROCESS_QUERY_INFORMATION = 0x0400
_PROCESS_VM_READ = 0x0010
_LIST_MODULES_ALL = 3
_MAX_HOLDERS_LOOKED_UP = 20  # files whose holders are looked up (each costs a Restart Manager session)


def _dll(name: str) -> Any:
    return getattr(ctypes, "WinDLL")(name, use_last_error=True)  # noqa: B009 (absent on Linux)


def _last_error() -> int:
    return int(getattr(ctypes, "get_last_error")())  # noqa: B009 (absent on Linux)


def probe(path: Path) -> int:
    """0 when ``path`` could be replaced or deleted now (or does not exist), else the Windows error."""
    kernel32 = _dll("kernel32")
    kernel32.CreateFileW.restype = wintypes.HANDLE
    kernel32.CreateFileW.argtypes = [wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD, ctypes.c_void_p,
                                     wintypes.DWORD, wintypes.DWORD, wintypes.HANDLE]
    handle = kernel32.CreateFileW(str(path), _GENERIC_WRITE | _DELETE, _SHARE_ALL, None, _OPEN_EXISTING, 0,
                                  None)
    if handle is None or handle == _INVALID_HANDLE:
        code = _last_error()
        return 0 if code in (ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND) else code
    kernel32.CloseHandle(wintypes.HANDLE(handle))
    return 0


def _reason(code: int) -> str:
    if code in (ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION):
        return IN_USE
    if code == ERROR_ACCESS_DENIED:
        return "access denied (read-only, or no permission to change it)"
    text = getattr(ctypes, "FormatError")(code).strip()  # noqa: B009 (absent on Linux)
    return f"cannot be opened for writing ({text}, Windows error {code})"


def in_use(paths: Sequence[Path]) -> list[InUse]:
    """Each of ``paths`` that cannot be replaced or deleted now, with why and who holds it."""
    blocked = [(Path(p), code) for p in paths if (code := probe(Path(p)))]
    if not blocked:
        return []
    looked_up = {p: _holders(p) for p, code in blocked[:_MAX_HOLDERS_LOOKED_UP]
                 if code in (ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION)}
    return [InUse(str(p), _reason(code), tuple(looked_up.get(p, ()))) for p, code in blocked]


# ---------------------------------------------------------------- who holds it


class _UniqueProcess(ctypes.Structure):
    _fields_ = [("dwProcessId", wintypes.DWORD), ("ProcessStartTime", wintypes.FILETIME)]


class _ProcessInfo(ctypes.Structure):
    _fields_ = [("Process", _UniqueProcess), ("strAppName", wintypes.WCHAR * 256),
                ("strServiceShortName", wintypes.WCHAR * 64), ("ApplicationType", ctypes.c_int),
                ("AppStatus", wintypes.ULONG), ("TSSessionId", wintypes.DWORD),
                ("bRestartable", wintypes.BOOL)]


def _holders(path: Path) -> list[str]:
    try:
        found = _restart_manager(path)
    except (OSError, AttributeError):
        found = []
    if not found:
        try:
            found = _module_holders(path)
        except (OSError, AttributeError):
            found = []
    return found


def _restart_manager(path: Path) -> list[str]:
    """``name (pid N)`` of every process the Restart Manager says uses ``path``."""
    rm = _dll("rstrtmgr")
    session = wintypes.DWORD()
    key = ctypes.create_unicode_buffer(64)
    if rm.RmStartSession(ctypes.byref(session), 0, key) != 0:
        return []
    try:
        files = (wintypes.LPCWSTR * 1)(str(path))
        if rm.RmRegisterResources(session, 1, files, 0, None, 0, None) != 0:
            return []
        infos = (_ProcessInfo * 16)()
        needed, count, reasons = wintypes.UINT(), wintypes.UINT(len(infos)), wintypes.DWORD()
        got = rm.RmGetList(session, ctypes.byref(needed), ctypes.byref(count), infos, ctypes.byref(reasons))
        if got != 0:
            return []
        return [f"{infos[i].strAppName or 'a process'} (pid {infos[i].Process.dwProcessId})"
                for i in range(min(count.value, len(infos)))]
    finally:
        rm.RmEndSession(session)


def _module_holders(path: Path) -> list[str]:
    """``exe (pid N)`` of every process with ``path`` among its loaded modules (psapi)."""
    kernel32, psapi = _dll("kernel32"), _dll("psapi")
    kernel32.OpenProcess.restype = wintypes.HANDLE
    pids = (wintypes.DWORD * 8192)()
    got = wintypes.DWORD()
    if not psapi.EnumProcesses(pids, ctypes.sizeof(pids), ctypes.byref(got)):
        return []
    want = os.path.normcase(os.path.abspath(path))
    me = os.getpid()
    found = []
    for pid in pids[: got.value // ctypes.sizeof(wintypes.DWORD)]:
        if pid in (0, me):
            continue
        handle = kernel32.OpenProcess(_PROCESS_QUERY_INFORMATION | _PROCESS_VM_READ, False, pid)
        if not handle:
            continue
        try:
            name = _loader_of(psapi, wintypes.HANDLE(handle), want)
        finally:
            kernel32.CloseHandle(wintypes.HANDLE(handle))
        if name is not None:
            found.append(f"{name} (pid {pid})")
    return found


def _loader_of(psapi: Any, process: Any, want: str) -> str | None:
    """The process's executable name when ``want`` is one of its modules, else None."""
    modules = (ctypes.c_void_p * 2048)()
    needed = wintypes.DWORD()
    if not psapi.EnumProcessModulesEx(process, modules, ctypes.sizeof(modules), ctypes.byref(needed),
                                      _LIST_MODULES_ALL):
        return None
    buf = ctypes.create_unicode_buffer(1024)
    count = min(needed.value // ctypes.sizeof(ctypes.c_void_p), len(modules))
    for module in modules[:count]:  # the first is the executable itself (a running zluda.exe)
        if psapi.GetModuleFileNameExW(process, ctypes.c_void_p(module), buf, len(buf)) and \
                os.path.normcase(buf.value) == want:
            psapi.GetModuleFileNameExW(process, None, buf, len(buf))
            return os.path.basename(buf.value) or "a process"
    return None
