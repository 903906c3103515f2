"""One child runner, one signal policy (core.child), for every caller: the workload run as a child
(``--verify-load``/``--monitor``), ``--trace``, ``warmup``, an ``ab`` side, a ``poc`` side, a probe
worker and a helper child (the doctor's torch probe, the interpreter's facts ...).

The workload starts a grandchild that leaves its session (``setsid``) and writes its pid, then says it
is ready; a signal it gets it notes, then ends by it (the signal passed on, with its grace: on d5e4bba
a probe worker was killed at once). A SIGTERM, SIGHUP or SIGINT sent to zluda-run then, or raised by
it right after the start (before it waits): no process of the tree is left, no temporary folder, and
zluda-run ends 128+N. On 7859508 ``warmup`` and ``--trace`` passed the signal to the workload alone
and the grandchild ran on (every caller's: a killed process group does not reach a process that left
it), and a kill right after warmup's start was lost when the test read its output (readline, then
communicate). Every wait here is for a marker file or a process's end, bounded only as a safety net.
Windows (each caller x Ctrl-C, a termination, a timeout): tests/windows/test_wine_child_policy.py."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import still_running

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals (tests/windows: job objects)")

CALLERS = ["run", "trace", "warmup", "ab", "poc", "probe", "helper"]
SAFETY_S = 120.0  # a bound on waits for a marker or an end, never a timing

_WORKLOAD = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    from pathlib import Path
    out = Path(sys.argv[1])
    def told(signum, frame):  # its grace: it hears the signal and ends by it, once it has said so
        (out / 'told').write_text(str(signum))
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, told)
    sleeper = ("import os, sys, time; from pathlib import Path; p = Path(sys.argv[1]); "
               "p.with_suffix('.t').write_text(str(os.getpid())); os.replace(p.with_suffix('.t'), p); "
               "time.sleep(600)")
    subprocess.Popen([sys.executable, '-c', sleeper, str(out / 'grandchild.pid')], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(12000):  # a bound, not a timing
        if (out / 'grandchild.pid').exists():
            break
        time.sleep(0.01)
    (out / 'child.pid').write_text(str(os.getpid()))
    (out / 'ready').write_text('')
    time.sleep(600)
""")

_DRIVER = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    caller, where, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    workload = [sys.executable, str(out / 'workload.py'), str(out)]
    if where == 'start':
        from zluda_runner.core import proctree
        real = proctree.start_tree
        def start(*args, **kwargs):
            tree = real(*args, **kwargs)
            (out / 'started.pid').write_text(str(tree.proc.pid))
            signal.raise_signal(signal.SIGTERM)  # the child exists, nobody waits for it yet
            return tree
        proctree.start_tree = start
    code = None
    if caller == 'run':
        from zluda_runner.launch.process import run_process
        code = run_process(workload, os.environ)
    elif caller == 'trace':
        from zluda_runner.trace.run import _run
        code = _run(workload, os.environ, None)[0]
    elif caller == 'warmup':
        from zluda_runner.launch.warmup import warmup
        code = warmup(workload, None, [out / 'cache'], heartbeat_s=600).exit_code
    elif caller == 'ab':
        from zluda_runner.abtest.run import run_ab
        run_ab(workload, workload, runs=1)
    elif caller == 'poc':
        from zluda_runner.poc.model import Thresholds
        from zluda_runner.poc.runner import Workload, run_sides
        from zluda_runner.telemetry.model import NoTelemetry
        run_sides(Workload('zluda', tuple(workload), {}), Workload('reference', tuple(workload), {}), runs=1,
                  source=NoTelemetry('none here'), thresholds=Thresholds())
    elif caller == 'probe':
        from zluda_runner.probe import channel
        with channel.reaping():
            child = channel.ProbeChild(workload, None, prefix=b'@@')
            while child.event(time.monotonic() + 600) not in (None, {'event': 'eof'}):
                pass
    else:
        from zluda_runner.core.child import run_child
        run_child(workload, timeout=600)
    (out / 'answer').write_text(repr(code))
    sys.exit(code if isinstance(code, int) else 0)
""")


def _defaults() -> None:  # as a shell starts zluda-run: the signals under test at their defaults
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


def _wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SAFETY_S
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)


def _drive(tmp_path: Path, caller: str, where: str, signum: int) -> tuple[int, list[int], Path]:
    """zluda-run's part played by a driver: its exit status (as a shell says it), the pids of the tree."""
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmp.mkdir()
    (out / "workload.py").write_text(_WORKLOAD)
    with open(tmp_path / "stderr.txt", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", _DRIVER, caller, where, str(out)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True,
                                env={**os.environ, "TMPDIR": str(tmp)}, preexec_fn=_defaults)
    try:
        if where == "running":
            _wait_for(out / "ready", proc)
            assert (out / "ready").exists(), (tmp_path / "stderr.txt").read_text()
            proc.send_signal(signum)
        proc.wait(timeout=SAFETY_S)
    finally:
        if proc.poll() is None:  # a failed test leaves nothing running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    pids = [int(p.read_text()) for p in (out / n for n in ("started.pid", "child.pid", "grandchild.pid"))
            if p.exists()]
    rc = proc.returncode
    return (128 - rc if rc < 0 else rc), pids, tmp


def _check(tmp_path: Path, caller: str, where: str, signum: int) -> None:
    code, pids, tmp = _drive(tmp_path, caller, where, signum)
    try:
        assert code == 128 + signum, (tmp_path / "stderr.txt").read_text()
        assert pids and [pid for pid in pids if still_running(pid)] == []
        assert list(tmp.iterdir()) == []
        assert "Traceback" not in (tmp_path / "stderr.txt").read_text() or signum == signal.SIGINT
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
@pytest.mark.parametrize("caller", CALLERS)
def test_a_signal_while_the_child_runs_ends_its_whole_tree_then_us(tmp_path: Path, caller: str,
                                                                  signum: int) -> None:
    _check(tmp_path, caller, "running", signum)
    assert (tmp_path / "out" / "grandchild.pid").exists()
    assert (tmp_path / "out" / "told").read_text() == str(signum)  # passed on, with a grace to end by it


@pytest.mark.parametrize("caller", CALLERS)
def test_a_sigterm_right_after_the_start_is_not_lost(tmp_path: Path, caller: str) -> None:
    _check(tmp_path, caller, "start", signal.SIGTERM)
