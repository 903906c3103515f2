"""A SIGTERM that comes while a probe worker starts, inside ``reaping()``: the worker is killed with
the probe, then we end with 143.  On 06039f0 the signal raised between the worker's start and its
registration (reaping's relay acted at once), reaping did not know it, and the worker, in a session
of its own, ran on.  The signal is raised by the process itself right after the start: no timing."""

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
    import signal, sys
    from zluda_runner.probe import channel
    real = channel.start_tree
    def start(*args, **kwargs):
        tree = real(*args, **kwargs)
        open(sys.argv[1], 'w').write(str(tree.proc.pid))
        signal.raise_signal(signal.SIGTERM)  # the worker exists, the probe does not know it yet
        return tree
    channel.start_tree = start
    with channel.reaping():
        channel.ProbeChild([sys.executable, '-c', 'import time; time.sleep(600)'], None, prefix=b'@@',
                           channel=sys.argv[2] == 'channel')
        print('not ended')
""")


@pytest.mark.parametrize("mode", ["channel", "stdout"])
def test_a_sigterm_while_a_worker_starts_kills_it_then_us(tmp_path: Path, mode: str) -> None:
    pidfile = tmp_path / "worker.pid"
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(pidfile), mode], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    pid = int(pidfile.read_text())
    try:
        assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
        assert "not ended" not in proc.stdout and "Traceback" not in proc.stderr
        assert not still_running(pid), "the worker outlived the probe"
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
