"""A warmup that stops early (Ctrl-C, or an API caller's heartbeat callback that raised) ends the
workload even when it ignores SIGTERM: on 062e6f1 it was sent SIGTERM and waited for without end
(zluda-run hung until killed, the workload with it).  Now it has ``core.child.GRACE_S`` to clean up, then it
is killed.  The workload ignores SIGTERM from its start (inherited), and the heartbeat fires at the
first timeout of a wait after the workload wrote its pid, on a workload that sleeps for minutes:
nothing depends on timing (a heartbeat before the workload ran would leave no pid to check)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import still_running

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from zluda_runner.launch import warmup as w
    from zluda_runner.core import child
    child.GRACE_S = 0.05  # what it waits before the kill (the default gives 5 s to clean up)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the workload inherits it: it ignores SIGTERM
    def beat(*_):  # once the workload runs (its pid written): it is then surely there to be ended
        if Path(sys.argv[1]).exists():
            raise RuntimeError('sink-failed')
    workload = ('import os, sys, time; open(sys.argv[1], "w").write(str(os.getpid())); '
                'time.sleep(600)')
    try:
        w.warmup([sys.executable, '-c', workload, sys.argv[1]], None, [Path(sys.argv[2])],
                 heartbeat_s=0.01, on_heartbeat=beat)
    except RuntimeError as exc:
        print('raised', exc)
""")


def test_a_workload_that_ignores_sigterm_is_killed_when_the_warmup_stops(tmp_path: Path) -> None:
    pidfile = tmp_path / "workload.pid"
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(pidfile), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)  # on 062e6f1: hung here
    finally:
        if proc.poll() is None:  # hung: end it and the workload (its group)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    pid = int(pidfile.read_text()) if pidfile.exists() else None
    try:
        assert proc.returncode == 0 and out.splitlines()[-1] == "raised sink-failed", (out, err)  # its error
        assert pid is not None and not still_running(pid)
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
