"""The one child policy (core.child) on the real Windows CPython under Wine; tests/core/
test_child_policy.py is Linux's. Every caller that starts a child on Windows (the workload run, warmup,
an ``ab`` side, a ``poc`` side, a probe worker, a helper child; ``--trace`` is Linux's only) x every way
zluda-run ends there while the child runs: Ctrl-C (the console's CTRL_C_EVENT), Ctrl-Break, zluda-run
terminated (TerminateProcess: Task Manager, ``taskkill /F``, a parent's job), its own timeout
(``warmup`` has none). The workload starts a detached grandchild (DETACHED_PROCESS, a process group
of its own).

What is checked afterwards: no process of the tree is left (each case's zluda-run is started in a Job
object of the test's, which counts every process started under it, nested jobs included: the count of
live ones is 0); its temporary folder (TMP) is empty, but after a termination (nothing of zluda-run
runs then: its children die with its job's handle, its folders stay); the exit code is the policy's:
130 after a Ctrl-C (a workload sharing the console ends by it; the other children's trees are
killed, then zluda-run ends as Ctrl-C ends it), the terminator's after a termination, 0 after a
timeout, which the caller reports; 128+21 after a Ctrl-Break (SIGBREAK). On d5e4bba a Ctrl-C during a
probe waited for the worker's deadline (600 s here): a lock's wait is deaf to Ctrl-C there; and a
Ctrl-Break ended zluda-run by its default (exit 3) and left ab's and poc's folders. Wine 8 delivers no
CTRL_BREAK_EVENT (error 6): the break is the SIGBREAK our C runtime raises for it, raised in
zluda-run (not for ``run``/``warmup``, whose workload shares the console and gets the break itself).

All cases run at once in one python.exe (one Wine session); every wait is for a marker file or a
process's end, bounded only as a safety net. The timeout counts from the workload's readiness (its
start is held until then), so it never cuts the workload's start short."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.windows.winpy import WinPython

CALLERS = ["run", "warmup", "ab", "poc", "probe", "helper"]
ENDS = ["ctrl-c", "break", "terminated", "timeout"]
SHARING = ("run", "warmup")  # their workload shares our console: it gets the console's Ctrl-Break itself
CASES = [(c, e) for c in CALLERS for e in ENDS
         if (c, e) != ("warmup", "timeout") and not (c in SHARING and e == "break")]

WORKLOAD = r'''
import os, subprocess, sys, time
from pathlib import Path
out = Path(sys.argv[1])
sleeper = ("import os, sys, time; from pathlib import Path; p = Path(sys.argv[1]); "
           "p.with_suffix('.t').write_text(str(os.getpid())); os.replace(p.with_suffix('.t'), p); "
           "time.sleep(600)")
DETACHED = 0x00000008 | subprocess.CREATE_NEW_PROCESS_GROUP  # no console, a group of its own
subprocess.Popen([sys.executable, '-c', sleeper, str(out / 'grandchild.pid')], creationflags=DETACHED,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(12000):  # a bound, not a timing
    if (out / 'grandchild.pid').exists():
        break
    time.sleep(0.01)
(out / 'child.pid').write_text(str(os.getpid()))
(out / 'ready').write_text('')
time.sleep(600)
'''

# zluda-run's part: one caller, ended one way; what the caller said goes to out/answer
DRIVER = r'''
import ctypes, json, os, signal, sys, threading, time
from pathlib import Path
caller, end, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
k32 = ctypes.WinDLL("kernel32", use_last_error=True)
k32.FreeConsole()  # a console of its own (started from a pipe it has none), shared with the workload
assert k32.AllocConsole(), "no console"
workload = [sys.executable, str(out.parent.parent / 'workload.py'), str(out)]
timeout = 1.0 if end == 'timeout' else None

def ready():
    for _ in range(12000):  # a bound, not a timing
        if (out / 'ready').exists():
            return
        time.sleep(0.01)

if end == 'ctrl-c':
    def press():
        ready()
        assert k32.GenerateConsoleCtrlEvent(0, 0), ctypes.get_last_error()  # CTRL_C_EVENT
    threading.Thread(target=press, daemon=True).start()
if end == 'break':  # the console's Ctrl-Break as our C runtime hands it on (Wine 8 delivers none)
    def press_break():
        ready()
        signal.raise_signal(signal.SIGBREAK)
    threading.Thread(target=press_break, daemon=True).start()
if end == 'timeout':  # the timeout counts from the workload's readiness: its start is held until then
    from zluda_runner.core import proctree
    real = proctree.start_tree
    def start(*args, **kwargs):
        (out / 'ready').unlink(missing_ok=True)
        tree = real(*args, **kwargs)
        ready()
        return tree
    proctree.start_tree = start

def said():
    if caller == 'run':
        from zluda_runner.core.errors import LaunchError
        from zluda_runner.launch.process import run_process
        try:
            return run_process(workload, os.environ, timeout=timeout)
        except LaunchError as exc:
            return "timed out" if "did not finish" in exc.message else exc.message
    if caller == 'warmup':
        from zluda_runner.launch.warmup import warmup
        return warmup(workload, None, [out / 'cache'], heartbeat_s=600).exit_code
    if caller == 'ab':
        from zluda_runner.abtest.run import run_ab
        return sorted({r.error for r in run_ab(workload, workload, runs=1, timeout=timeout).runs})
    if caller == 'poc':
        from zluda_runner.poc.model import Thresholds
        from zluda_runner.poc.runner import Workload, run_sides
        from zluda_runner.telemetry.model import NoTelemetry
        sides = (Workload('zluda', tuple(workload), {}), Workload('reference', tuple(workload), {}))
        ours, ref = run_sides(*sides, runs=1, source=NoTelemetry('none here'), thresholds=Thresholds(),
                              timeout=timeout)
        return sorted({r.error for r in (*ours, *ref)})
    if caller == 'probe':
        from zluda_runner.probe import channel
        with channel.reaping():
            child = channel.ProbeChild(workload, None, prefix=b'@@')
            deadline = time.monotonic() + (timeout or 600)
            while (event := child.event(deadline)) is not None and event['event'] != 'eof':
                pass  # the worker's events until it exits (eof) or the deadline (None)
            exited = event is not None
            child.finish(kill=not exited)
            return "exited" if exited else "timed out"
    from zluda_runner.core.child import run_child
    result = run_child(workload, timeout=timeout or 600)
    return "timed out" if result.timed_out else result.returncode

try:
    answer = said()
except KeyboardInterrupt:  # as zluda-run's main says Ctrl-C
    sys.exit(130)
(out / 'answer').write_text(json.dumps(answer))
sys.exit(answer if isinstance(answer, int) else 0)
'''

# The cases at once, each zluda-run in a Job object of ours that counts all it started
ORCHESTRATOR = r'''
import concurrent.futures, ctypes, json, os, subprocess, sys, time
from ctypes import wintypes
from pathlib import Path
from zluda_runner.core import winproc
here = Path(sys.argv[1])
cases = json.loads(sys.argv[2])
# Wine's first console starts its desktop process (explorer.exe /desktop), which stays: here, not in a
# case's job
ctypes.WinDLL("kernel32").FreeConsole()
assert ctypes.WinDLL("kernel32").AllocConsole(), "no console"
SAFETY_S = 120.0

class Accounting(ctypes.Structure):  # JOBOBJECT_BASIC_ACCOUNTING_INFORMATION (winnt.h)
    _fields_ = [("TotalUserTime", ctypes.c_int64), ("TotalKernelTime", ctypes.c_int64),
                ("ThisPeriodTotalUserTime", ctypes.c_int64), ("ThisPeriodTotalKernelTime", ctypes.c_int64),
                ("TotalPageFaultCount", wintypes.DWORD), ("TotalProcesses", wintypes.DWORD),
                ("ActiveProcesses", wintypes.DWORD), ("TotalTerminatedProcesses", wintypes.DWORD)]
query = ctypes.WinDLL("kernel32", use_last_error=True).QueryInformationJobObject
query.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD, ctypes.c_void_p]

def counts(job):
    info = Accounting()
    assert query(job.handle, 1, ctypes.byref(info), ctypes.sizeof(info), None), ctypes.get_last_error()
    return info.TotalProcesses, info.ActiveProcesses

def case(caller, end):
    folder = here / f"{caller}-{end}"
    out, tmp = folder / "out", folder / "tmp"
    out.mkdir(parents=True)
    tmp.mkdir()
    env = {**os.environ, "TMP": str(tmp), "TEMP": str(tmp)}
    proc, job = winproc.popen_in_job([sys.executable, str(here / "driver.py"), caller, end, str(out)],
                                     new_group=False, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if end == "terminated":
            deadline = time.monotonic() + SAFETY_S
            while not (out / "ready").exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            proc.kill()  # TerminateProcess(zluda-run, 1)
        try:
            err = proc.communicate(timeout=SAFETY_S)[1]
        except subprocess.TimeoutExpired:
            err = b"(zluda-run still running)"
        deadline = time.monotonic() + SAFETY_S  # what is killed may take a moment to be gone
        while counts(job)[1] and time.monotonic() < deadline:
            time.sleep(0.01)
        total, active = counts(job)
        answer = out / "answer"
        return {"rc": proc.returncode, "total": total, "active": active, "tmp": sorted(os.listdir(tmp)),
                "pids": sorted(p.name for p in out.glob("*.pid")),
                "answer": json.loads(answer.read_text()) if answer.exists() else None,
                "stderr": err.decode("utf-8", "replace")[-3000:]}
    finally:
        job.terminate()
        job.close()

with concurrent.futures.ThreadPoolExecutor(9) as pool:
    done = {f"{c}-{e}": pool.submit(case, c, e) for c, e in cases}
print("ANSWER", json.dumps({name: future.result() for name, future in done.items()}), flush=True)
'''


@pytest.fixture(scope="module")
def ended(winpy: WinPython, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every case run once, all at once: what each left behind."""
    here = tmp_path_factory.mktemp("child-policy")
    for name, text in (("workload.py", WORKLOAD), ("driver.py", DRIVER), ("orchestrator.py", ORCHESTRATOR)):
        (here / name).write_text(text, encoding="utf-8")
    proc = winpy.run([winpy.winpath(here / "orchestrator.py"), winpy.winpath(here), json.dumps(CASES)],
                     cwd=here, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ANSWER ")]
    assert lines, f"exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    answer: dict[str, Any] = json.loads(lines[-1][len("ANSWER "):])
    return answer


@pytest.mark.parametrize(("caller", "end"), CASES, ids=[f"{c}-{e}" for c, e in CASES])
def test_zluda_run_ending_ends_the_childs_whole_tree(ended: dict[str, Any], caller: str, end: str) -> None:
    got = ended[f"{caller}-{end}"]
    assert got["pids"] == ["child.pid", "grandchild.pid"], got  # the tree was there
    assert got["total"] >= 3 and got["active"] == 0, got  # zluda-run, the workload, the grandchild: gone
    if end in ("ctrl-c", "break"):
        assert got["rc"] == (130 if end == "ctrl-c" else 128 + 21) and got["tmp"] == [], got  # SIGBREAK: 21
    elif end == "terminated":
        assert got["rc"] == 1, got  # TerminateProcess's code: nothing of zluda-run ran after it
    else:
        timed_out = ["timed out after 1 s"] if caller in ("ab", "poc") else "timed out"
        assert (got["rc"], got["answer"], got["tmp"]) == (0, timed_out, []), got
