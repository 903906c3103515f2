"""The process seam on the real Windows CPython under Wine: exit codes, Ctrl-C, whole-tree kills.

Each test runs a small driver program in Wine's python.exe (zluda-runner installed from its wheel,
nothing patched) that calls zluda-runner's own functions and prints what it saw as JSON.

What these prove was measured first under Wine 8.0 (recorded in zluda_runner/core/winproc.py):
a Job object with KILL_ON_JOB_CLOSE, TerminateJobObject, nested jobs, breakaway refused
(``CREATE_BREAKAWAY_FROM_JOB`` -> WinError 5), Python's Ctrl-C exit 0xC000013A (how every caller's
child ends on a Ctrl-C, a termination, a timeout: test_wine_child_policy.py). Wine delivers
``GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0)`` only to processes with a console, and a python.exe
started from a pipe has none (error 12): the Ctrl-C driver makes one (FreeConsole + AllocConsole),
which the workload then shares. Wine 8 does not deliver CTRL_BREAK_EVENT (to a group, or to 0).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.windows.winpy import WinPython

# The driver's own Job object: every process started under it (children, grandchildren, the
# workload's own nested job) is counted in it, so "nothing is left" is a number, not a guess.
OUTER_JOB = r'''
import ctypes, json, os, subprocess, sys
from ctypes import wintypes
from zluda_runner.core import winproc
outer = winproc.Job()
own = ctypes.WinDLL("kernel32").GetCurrentProcess()
assert winproc._k32().AssignProcessToJobObject(outer.handle, own), "cannot put the driver in a job"

class Accounting(ctypes.Structure):  # JOBOBJECT_BASIC_ACCOUNTING_INFORMATION (winnt.h)
    _fields_ = [("TotalUserTime", ctypes.c_int64), ("TotalKernelTime", ctypes.c_int64),
                ("ThisPeriodTotalUserTime", ctypes.c_int64), ("ThisPeriodTotalKernelTime", ctypes.c_int64),
                ("TotalPageFaultCount", wintypes.DWORD), ("TotalProcesses", wintypes.DWORD),
                ("ActiveProcesses", wintypes.DWORD), ("TotalTerminatedProcesses", wintypes.DWORD)]

query = ctypes.WinDLL("kernel32", use_last_error=True).QueryInformationJobObject
query.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD, ctypes.c_void_p]

def accounting():
    info = Accounting()
    # JobObjectBasicAccountingInformation = 1
    assert query(outer.handle, 1, ctypes.byref(info), ctypes.sizeof(info), None), ctypes.get_last_error()
    return {"active": info.ActiveProcesses, "total": info.TotalProcesses}

class IdList(ctypes.Structure):  # JOBOBJECT_BASIC_PROCESS_ID_LIST (winnt.h), room for 64
    _fields_ = [("assigned", wintypes.DWORD), ("listed", wintypes.DWORD), ("ids", ctypes.c_size_t * 64)]

def others():
    """The image names of the job's live processes but this one."""
    k32 = ctypes.WinDLL("kernel32", use_last_error=True)
    ids = IdList()
    # JobObjectBasicProcessIdList = 3
    assert query(outer.handle, 3, ctypes.byref(ids), ctypes.sizeof(ids), None), ctypes.get_last_error()
    names = []
    for pid in ids.ids[:ids.listed]:
        if pid == os.getpid():
            continue
        handle = k32.OpenProcess(0x1000, False, wintypes.DWORD(pid))  # PROCESS_QUERY_LIMITED_INFORMATION
        buf, size = ctypes.create_unicode_buffer(1024), wintypes.DWORD(1024)
        k32.QueryFullProcessImageNameW(handle, 0, buf, ctypes.byref(size))
        k32.CloseHandle(handle)
        names.append(buf.value.rsplit("\\", 1)[-1].lower() or str(pid))
    return sorted(names)
'''

# A child that starts a grandchild, waits until it runs, then (argv[1]) hangs or exits 0.
FAMILY = r'''
import subprocess, sys, time
sleeper = "print('up', flush=True); import time; time.sleep(600)"
# holding none of the driver's pipes: a grandchild left alive fails the test, it does not hang it
grandchild = subprocess.Popen([sys.executable, "-c", sleeper], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
assert grandchild.stdout.readline().strip() == b"up"
print(grandchild.pid, flush=True)
if sys.argv[1] == "hang":
    time.sleep(600)
'''


def _drive(winpy: WinPython, tmp_path: Path, source: str, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "driver.py"
    script.write_text(source, encoding="utf-8")
    (tmp_path / "family.py").write_text(FAMILY, encoding="utf-8")
    return winpy.run([winpy.winpath(script), *args], env=env, cwd=tmp_path, timeout=300)


def _answer(proc: subprocess.CompletedProcess[str]) -> Any:
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ANSWER ")]
    assert lines, f"driver exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len("ANSWER "):])


@pytest.mark.parametrize(("workload", "code"), [
    ("import os; os._exit(0)", 0),
    ("raise SystemExit(7)", 7),
    ("import faulthandler; faulthandler._read_null()", 0xC0000005),  # a real access violation, unchanged
])
def test_run_process_passes_the_exit_code_back(winpy: WinPython, tmp_path: Path, workload: str, code: int
                                               ) -> None:
    source = (
        "import json, os, sys\n"
        "from zluda_runner.launch.process import run_process\n"
        f"rc = run_process([sys.executable, '-c', {workload!r}], os.environ)\n"
        "print('ANSWER', json.dumps(rc))\n"
    )
    assert _answer(_drive(winpy, tmp_path, source)) == code


def test_exec_process_runs_the_workload_and_exits_with_its_code(winpy: WinPython, tmp_path: Path) -> None:
    """No os.execve on Windows (it would end us at once, with 0): run, then exit with the child's code."""
    source = (
        "import os, sys\n"
        "from zluda_runner.launch.process import exec_process\n"
        "exec_process([sys.executable, '-c', 'print(\"workload ran\"); raise SystemExit(7)'], os.environ)\n"
        "print('after exec_process')\n"
    )
    proc = _drive(winpy, tmp_path, source)
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout.splitlines() == ["workload ran"]  # the workload's output, then nothing of ours


def test_nothing_the_workload_started_outlives_run_process(winpy: WinPython, tmp_path: Path) -> None:
    """The workload exits 0 leaving a grandchild running: it dies with the workload's job."""
    source = OUTER_JOB + r'''
from zluda_runner.launch.process import run_process
rc = run_process([sys.executable, "family.py", "exit"], os.environ)
print("ANSWER", json.dumps({"rc": rc, **accounting()}), flush=True)
'''
    assert _answer(_drive(winpy, tmp_path, source)) == {"rc": 0, "total": 3, "active": 1}


def test_a_tree_kill_ends_child_and_grandchild_at_once(winpy: WinPython, tmp_path: Path) -> None:
    """The seam's kill itself, with handles held on both (their ids cannot be reused meanwhile)."""
    source = r'''
import json, subprocess, sys
from zluda_runner.core import proctree, winproc
tree = proctree.start_tree([sys.executable, "family.py", "hang"], stdout=subprocess.PIPE)
grandchild = winproc.open_process(int(tree.proc.stdout.readline()))
child = winproc.open_process(tree.proc.pid)
before = [winproc.has_exited(child), winproc.has_exited(grandchild)]
tree.kill()
ends = [winproc._k32().WaitForSingleObject(h, 60000) for h in (child, grandchild)]
codes = [winproc.exit_code_of(h) for h in (child, grandchild)]
tree.proc.wait()
tree.close()
print("ANSWER", json.dumps({"before": before, "waits": ends, "codes": codes}), flush=True)
'''
    answer = _answer(_drive(winpy, tmp_path, source))
    assert answer == {"before": [False, False], "waits": [0, 0], "codes": [1, 1]}  # WAIT_OBJECT_0


def test_run_child_reads_a_childs_output_and_code(winpy: WinPython, tmp_path: Path) -> None:
    source = r'''
import json, sys
from zluda_runner.core.child import run_child
r = run_child([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(5)"],
              timeout=120)
print("ANSWER", json.dumps([r.returncode, r.stdout.strip(), r.stderr.strip(), r.timed_out]), flush=True)
'''
    assert _answer(_drive(winpy, tmp_path, source)) == [5, "out", "err", False]


def test_commands_resolve_as_windows_finds_them(winpy: WinPython, tmp_path: Path) -> None:
    """PATHEXT: ``python`` is python.exe; a .py file is not a program (126); nothing there is 127."""
    (tmp_path / "script.py").write_text("print('hi')\n", encoding="utf-8")
    source = r'''
import json, os, sys
from zluda_runner.core.errors import LaunchError
from zluda_runner.launch.process import resolve_command, run_process
home = os.path.dirname(sys.executable)
env = {"Path": home, "PATHEXT": ".COM;.EXE;.BAT;.CMD"}  # names are case-insensitive on Windows
def outcome(argv0):
    try:
        return ["ok", resolve_command(argv0, env)]
    except LaunchError as exc:
        return [exc.exit_code, exc.kind, exc.hint]
answer = {
    "bare": outcome("python"),
    "path_without_suffix": outcome(os.path.join(home, "python")),
    "script": outcome(os.path.abspath("script.py")),
    "script_on_path": outcome("script.py"),
    "missing": outcome("no-such-program"),
    "run_bare": run_process(["python", "-c", "raise SystemExit(3)"], {**os.environ, "PATH": home}),
}
print("ANSWER", json.dumps(answer), flush=True)
'''
    answer = _answer(_drive(winpy, tmp_path, source))
    exe = winpy.winpath(winpy.exe).lower()
    assert answer["bare"][0] == "ok" and answer["bare"][1].lower() == exe
    assert answer["path_without_suffix"][0] == "ok" and answer["path_without_suffix"][1].lower() == exe
    assert answer["script"][:2] == [126, "command-not-executable"]
    assert "python script.py" in answer["script"][2]  # the hint's command line: run it with python
    assert answer["script_on_path"][:2] == [126, "command-not-executable"]  # here, but not a program
    assert answer["missing"][:2] == [127, "command-not-found"]
    assert answer["run_bare"] == 3
