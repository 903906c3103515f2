"""Windows process primitives (kernel32 through ctypes): a Job object per child tree, exit codes.

Imported only on Windows (by :mod:`zluda_runner.core.proctree`), so Linux never loads it.

- A child is created suspended, put in a fresh Job object with ``KILL_ON_JOB_CLOSE``, then
  resumed: whatever it starts is in the job from its first instruction, so
  :meth:`Job.terminate` ends the whole tree, and closing the job's handle (also when this
  process dies, however it dies) kills what is still in it: no orphan survives us.
- An NTSTATUS exit code (a crash, Ctrl-C) gets a name; ``STATUS_CONTROL_C_EXIT`` (what a console
  program ended by Ctrl-C exits with, Python included) counts as SIGINT does on Linux: 130.

Measured under Wine 8.0 (Debian 12) with the official CPython 3.13.2 (tests/windows/
test_wine_process.py keeps each of these true):

- ``TerminateJobObject`` ends a child and the grandchild it started (``WaitForSingleObject`` on
  a handle to the grandchild returns at once afterwards, exit code as given); closing the last
  job handle with ``KILL_ON_JOB_CLOSE`` does the same (the killed exit with 0).
- A child created ``CREATE_SUSPENDED`` runs after ``NtResumeProcess``; its children are in the job.
- A process already in our job can be assigned to a job of its own (nested jobs work, and the
  outer job still counts its processes); ``CREATE_BREAKAWAY_FROM_JOB`` is refused (WinError 5),
  so a workload cannot leave the job.
- Python ended by an uncaught ``KeyboardInterrupt`` exits 0xC000013A (``STATUS_CONTROL_C_EXIT``),
  and so does a process ended by the console's Ctrl-C; an access violation exits 0xC0000005.
- ``GenerateConsoleCtrlEvent`` needs a console: a python.exe started from a pipe has none
  (error 12). With one (``AllocConsole``), ``CTRL_C_EVENT`` to group 0 reaches every process on
  it; Wine 8 delivers no ``CTRL_BREAK_EVENT`` (to a group: error 6; to group 0: refused).
- ``PROC_THREAD_ATTRIBUTE_HANDLE_LIST`` is honoured: an inheritable handle not in the list is
  not inherited.
"""

from __future__ import annotations

import ctypes
import subprocess
from ctypes import wintypes
from typing import Any

STATUS_CONTROL_C_EXIT = 0xC000013A
STILL_ACTIVE = 259
KILLED_EXIT_CODE = 1  # what a killed tree exits with: Popen.kill's (TerminateProcess) code
CREATE_SUSPENDED = 0x00000004
CREATE_NEW_PROCESS_GROUP = 0x00000200

NTSTATUS_NAMES = {
    0xC0000005: "STATUS_ACCESS_VIOLATION",
    0xC000001D: "STATUS_ILLEGAL_INSTRUCTION",
    0xC0000094: "STATUS_INTEGER_DIVIDE_BY_ZERO",
    0xC0000096: "STATUS_PRIVILEGED_INSTRUCTION",
    0xC00000FD: "STATUS_STACK_OVERFLOW",
    0xC0000135: "STATUS_DLL_NOT_FOUND",
    0xC0000139: "STATUS_ENTRYPOINT_NOT_FOUND",
    0xC0000142: "STATUS_DLL_INIT_FAILED",
    0xC000013A: "STATUS_CONTROL_C_EXIT",
    0xC0000374: "STATUS_HEAP_CORRUPTION",
    0xC0000409: "STATUS_STACK_BUFFER_OVERRUN",
    0x80000003: "STATUS_BREAKPOINT",
}

_JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
_JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9
_PROCESS_TERMINATE = 0x0001
_PROCESS_SET_QUOTA = 0x0100
_PROCESS_SUSPEND_RESUME = 0x0800
_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_SYNCHRONIZE = 0x00100000


class _BasicLimits(ctypes.Structure):
    _fields_ = [
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", wintypes.DWORD),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", wintypes.DWORD),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", wintypes.DWORD),
        ("SchedulingClass", wintypes.DWORD),
    ]


class _IoCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
        "ReadTransferCount", "WriteTransferCount", "OtherTransferCount")]


class _ExtendedLimits(ctypes.Structure):
    _fields_ = [
        ("BasicLimitInformation", _BasicLimits),
        ("IoInfo", _IoCounters),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    ]


def _dll(name: str) -> Any:
    """A system DLL with last-error capture (``ctypes.WinDLL`` exists only on Windows)."""
    return getattr(ctypes, "WinDLL")(name, use_last_error=True)  # noqa: B009 (absent on Linux)


_kernel32: Any = None
_ntdll: Any = None


def _k32() -> Any:
    global _kernel32
    if _kernel32 is None:
        k = _dll("kernel32")
        k.CreateJobObjectW.restype = wintypes.HANDLE
        k.CreateJobObjectW.argtypes = [ctypes.c_void_p, wintypes.LPCWSTR]
        k.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD]
        k.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
        k.TerminateJobObject.argtypes = [wintypes.HANDLE, wintypes.UINT]
        k.OpenProcess.restype = wintypes.HANDLE
        k.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
        k.CloseHandle.argtypes = [wintypes.HANDLE]
        k.WaitForSingleObject.restype = wintypes.DWORD
        k.WaitForSingleObject.argtypes = [wintypes.HANDLE, wintypes.DWORD]
        k.GetExitCodeProcess.argtypes = [wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD)]
        _kernel32 = k
    return _kernel32


def _nt() -> Any:
    global _ntdll
    if _ntdll is None:
        _ntdll = _dll("ntdll")
        _ntdll.NtResumeProcess.argtypes = [wintypes.HANDLE]
        _ntdll.NtResumeProcess.restype = ctypes.c_long
    return _ntdll


def _error(what: str) -> OSError:
    code = getattr(ctypes, "get_last_error")()  # noqa: B009 (absent on Linux)
    return OSError(f"{what} failed (Windows error {code})")


def open_process(pid: int, access: int = _SYNCHRONIZE | _PROCESS_QUERY_LIMITED_INFORMATION) -> int:
    """A handle to process ``pid`` (close it with :func:`close_handle`)."""
    handle = _k32().OpenProcess(access, False, pid)
    if not handle:
        raise _error(f"OpenProcess({pid})")
    return int(handle)


def close_handle(handle: int) -> None:
    _k32().CloseHandle(handle)


def has_exited(handle: int) -> bool:
    """The process behind ``handle`` has ended (its handle is signalled)."""
    return int(_k32().WaitForSingleObject(handle, 0)) == 0


def exit_code_of(handle: int) -> int | None:
    code = wintypes.DWORD()
    if not _k32().GetExitCodeProcess(handle, ctypes.byref(code)) or code.value == STILL_ACTIVE:
        return None
    return int(code.value)


class Job:
    """One Job object with ``KILL_ON_JOB_CLOSE``: what is in it dies with it."""

    def __init__(self) -> None:
        k = _k32()
        handle = k.CreateJobObjectW(None, None)
        if not handle:
            raise _error("CreateJobObjectW")
        self.handle: int | None = int(handle)
        limits = _ExtendedLimits()
        limits.BasicLimitInformation.LimitFlags = _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        if not k.SetInformationJobObject(self.handle, _JOB_OBJECT_EXTENDED_LIMIT_INFORMATION,
                                         ctypes.byref(limits), ctypes.sizeof(limits)):
            err = _error("SetInformationJobObject")
            self.close()
            raise err

    def assign(self, pid: int) -> None:
        process = open_process(pid, _PROCESS_SET_QUOTA | _PROCESS_TERMINATE | _PROCESS_SUSPEND_RESUME)
        try:
            if not _k32().AssignProcessToJobObject(self.handle, process):
                raise _error(f"AssignProcessToJobObject({pid})")
        finally:
            close_handle(process)

    def terminate(self, exit_code: int = KILLED_EXIT_CODE) -> None:
        """End every process in the job now (a no-op once it is closed or empty)."""
        if self.handle is not None:
            _k32().TerminateJobObject(self.handle, exit_code)

    def close(self) -> None:
        """Let go of the job: what is still in it is killed (``KILL_ON_JOB_CLOSE``)."""
        if self.handle is not None:
            close_handle(self.handle)
            self.handle = None


def resume(pid: int) -> None:
    """Resume every thread of a process created ``CREATE_SUSPENDED``."""
    process = open_process(pid, _PROCESS_SUSPEND_RESUME)
    try:
        status = int(_nt().NtResumeProcess(process))
        if status != 0:
            raise OSError(f"NtResumeProcess({pid}) failed (NTSTATUS {status & 0xFFFFFFFF:#x})")
    finally:
        close_handle(process)


def popen_in_job(args: list[str], *, new_group: bool, **popen: Any) -> tuple[subprocess.Popen[bytes], Job]:
    """``Popen(args, **popen)`` started suspended, in a fresh job, then resumed.

    ``new_group``: the child leads a new console process group (Ctrl-C typed at the console does
    not reach it, as a new session on Linux), else it gets the console's Ctrl-C as we do."""
    flags = int(popen.pop("creationflags", 0)) | CREATE_SUSPENDED
    if new_group:
        flags |= CREATE_NEW_PROCESS_GROUP
    job = Job()
    try:
        proc: subprocess.Popen[bytes] = subprocess.Popen(args, creationflags=flags, **popen)
    except BaseException:
        job.close()
        raise
    try:
        job.assign(proc.pid)
        resume(proc.pid)
    except BaseException:
        proc.kill()
        proc.wait()
        job.close()
        raise
    return proc, job


def exit_status(returncode: int) -> int:
    """A Windows exit code as zluda-run passes it on: Ctrl-C's 0xC000013A -> 130, as on Linux."""
    return 130 if returncode & 0xFFFFFFFF == STATUS_CONTROL_C_EXIT else returncode


def termination_name(returncode: int | None) -> str | None:
    """The NTSTATUS name of an exit code that means the process was ended abnormally, else None."""
    if returncode is None:
        return None
    return NTSTATUS_NAMES.get(returncode & 0xFFFFFFFF)
