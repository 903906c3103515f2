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
import time
from pathlib import Path

import pytest

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


def _alive(pid: int) -> bool:
    """Still running once a SIGKILL sent to it has had a bound to take effect (gone, or a zombie: dead)."""
    deadline = time.monotonic() + 60.0  # a bound, not a timing: SIGKILL takes effect at once
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.02)


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
        assert not _alive(pid), "the worker outlived the probe"
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
