"""``run_traced(..., timeout=)``: the command is the root of its own tree, killed whole at the timeout;
a command that cannot be run is a clear error; a SIGTERM kills the tree, then ends us with 143.
On 854a486 the timeout killed the command alone (what it started, torchrun's workers, ran on),
a file without the execute bit came out as a bare PermissionError, and a SIGTERM ended us alone."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
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
    from zluda_runner.core import child

    real_exited = child._Watch.exited

    def exited(self: child._Watch, seconds: float) -> bool:  # the grandchild exists before the timeout counts
        for _ in range(6000):  # a bound, not a timing
            if pidfile.exists():
                break
            time.sleep(0.01)
        return real_exited(self, seconds)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(child._Watch, "exited", exited)
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
