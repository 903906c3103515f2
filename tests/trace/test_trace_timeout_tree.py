"""``run_traced(..., timeout=)``: the command is the root of its own tree, killed whole at the timeout;
a command that cannot be run is a clear error; a SIGTERM kills the tree, then ends us with 143.
On 854a486 the timeout killed the command alone (what it started, torchrun's workers, ran on),
a file without the execute bit came out as a bare PermissionError, and a SIGTERM ended us alone."""

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
from zluda_runner.core.errors import CommandNotExecutableError
from zluda_runner.trace import run as trace_run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

# starts a grandchild that writes its pid and sleeps, then sleeps itself
_SPAWNER = ("import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import os, sys, time; open(sys.argv[1] + \".t\", \"w\")"
            ".write(str(os.getpid())); os.replace(sys.argv[1] + \".t\", sys.argv[1]); time.sleep(600)', "
            "sys.argv[1]]); time.sleep(600)")


def test_a_timeout_kills_what_the_command_started(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    real_wait = subprocess.Popen.wait

    def wait(self: subprocess.Popen[bytes], timeout: float | None = None) -> int:
        if timeout is not None:  # the grandchild exists before the (short) timeout is counted
            for _ in range(6000):  # a bound, not a timing
                if pidfile.exists():
                    break
                time.sleep(0.01)
        return real_wait(self, timeout)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subprocess.Popen, "wait", wait)
        code, ended = trace_run._run([sys.executable, "-c", _SPAWNER, str(pidfile)], dict(os.environ), 0.01)
    pid = int(pidfile.read_text())
    try:
        assert (code, ended) == (None, None)
        assert not still_running(pid), "the command's child outlived the timeout"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_file_without_the_execute_bit_is_a_clear_error(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    with pytest.raises(CommandNotExecutableError) as caught:
        trace_run._run([str(script)], dict(os.environ), 30.0)
    assert caught.value.hint


def test_a_sigterm_kills_the_tree_then_ends_us_with_143(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    code = textwrap.dedent("""
        import os, signal, subprocess, sys, time
        from zluda_runner.trace import run as trace_run
        real_wait = subprocess.Popen.wait
        def wait(self, timeout=None):
            for _ in range(6000):  # the grandchild exists (a bound, not a timing)
                if os.path.exists(sys.argv[1]):
                    break
                time.sleep(0.01)
            signal.raise_signal(signal.SIGTERM)
            return real_wait(self, timeout)
        subprocess.Popen.wait = wait
        trace_run._run([sys.executable, '-c', sys.argv[2], sys.argv[1]], dict(os.environ), 300.0)
        print('not ended')
    """)
    proc = subprocess.Popen([sys.executable, "-c", code, str(pidfile), _SPAWNER], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    try:
        out, err = proc.communicate(timeout=120)  # on 854a486 the orphans held the pipes: it timed out
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # what is left of its session (all of it on 854a486)
        proc.wait()
    pid = int(pidfile.read_text()) if pidfile.exists() else None
    try:
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "not ended" not in out and "Traceback" not in err
        assert pid is not None and not still_running(pid)
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
