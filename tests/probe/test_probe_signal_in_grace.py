"""A SIGTERM while a probe gives a worker its grace to end (``ProbeChild.finish``): reaping kills the
worker, then we end with 143.  On be54c76 ``finish`` forgot the worker before the grace, so the
signal raised in it left the worker running, in a session of its own.  The signal is raised by the
process itself as the grace begins: nothing depends on timing."""

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
    real = channel.end_tree
    def end_tree(tree, **how):
        signal.raise_signal(signal.SIGTERM)  # as the worker's grace begins
        return real(tree, **how)
    channel.end_tree = end_tree
    with channel.reaping():
        child = channel.ProbeChild([sys.executable, '-c', 'import time; time.sleep(600)'], None, prefix=b'@@')
        open(sys.argv[1], 'w').write(str(child.proc.pid))
        child.finish()
    print('NOT-ENDED')
""")


def test_a_sigterm_in_a_workers_grace_kills_it_then_us(tmp_path: Path) -> None:
    pidfile = tmp_path / "worker.pid"
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(pidfile)], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    pid = int(pidfile.read_text())
    try:
        assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
        assert "NOT-ENDED" not in proc.stdout and "Traceback" not in proc.stderr  # the script's own marker
        assert not still_running(pid), "the worker outlived the probe"
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
