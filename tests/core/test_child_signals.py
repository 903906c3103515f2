"""``kill`` of zluda-run while one of its helper children runs (the doctor's torch probe, the target
interpreter's facts, the HIP query, ``rocminfo``): the child's tree is killed, then we end with
128+N.  On 4adb14d :func:`run_child` took no signal: SIGTERM's default ended zluda-run alone and the
child, in a session of its own, ran on unwatched, past its timeout.  The signal is raised by the
process itself at the exact point under test (while the child starts; while we wait for it)."""

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

# the child starts a grandchild that writes its pid, then both sleep
_CHILD = ("import subprocess, sys, time; "
          "subprocess.Popen([sys.executable, '-c', 'import os, sys, time; open(sys.argv[1] + \".t\", \"w\")"
          ".write(str(os.getpid())); os.replace(sys.argv[1] + \".t\", sys.argv[1]); time.sleep(600)', "
          "sys.argv[1]]); time.sleep(600)")

_SCRIPT = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    from zluda_runner.core import child
    where, pids = sys.argv[1], sys.argv[2]
    real_start, real_wait = child.start_tree, subprocess.Popen.wait
    def start(*args, **kwargs):
        tree = real_start(*args, **kwargs)
        open(pids + '.child', 'w').write(str(tree.proc.pid))
        if where == 'start':
            signal.raise_signal(signal.SIGTERM)  # while it starts: held, delivered once it runs
        return tree
    def wait(self, timeout=None):
        if where == 'wait' and timeout is not None:
            for _ in range(6000):  # its grandchild exists (a bound, not a timing)
                if os.path.exists(pids):
                    break
                time.sleep(0.01)
            signal.raise_signal(signal.SIGTERM)
        return real_wait(self, timeout)
    child.start_tree = start
    subprocess.Popen.wait = wait
    result = child.run_child([sys.executable, '-c', sys.argv[3], pids], timeout=300)
    print('not ended', result)
""")


@pytest.mark.parametrize("where", ["start", "wait"])
def test_a_sigterm_kills_the_helper_childs_tree_then_us(tmp_path: Path, where: str) -> None:
    pids = tmp_path / "grandchild.pid"
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, where, str(pids), _CHILD], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    left = [int(p.read_text()) for p in (Path(f"{pids}.child"), pids) if p.exists()]
    try:
        assert proc.returncode == 128 + signal.SIGTERM, proc.stderr  # was -SIGTERM: its default
        assert "not ended" not in proc.stdout and "Traceback" not in proc.stderr
        assert left and [pid for pid in left if still_running(pid)] == []  # the child (and its child) ran on
    finally:  # the child leads its own group: what it started goes with it
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
