"""``kill`` of ``zluda-run warmup`` while the workload runs: the workload gets the signal too (as ``run``
passes it on) and its code is reported; on 6dd7d2e SIGTERM's default ended zluda-run alone and left the
workload running, an orphan. A handler of the API caller's own is kept (the
rest of the policy, every caller's: tests/core/test_child_policy.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

_WARMUP = (
    "import json, signal, sys\n"
    "from pathlib import Path\n"
    "from zluda_runner.launch.warmup import warmup\n"
    "if sys.argv[1] == 'own':\n"
    "    signal.signal(signal.SIGTERM, lambda *_: print(json.dumps({'own': True}), flush=True))\n"
    "r = warmup(['sh', '-c', 'echo $$; exec sleep 600'], None, [Path(sys.argv[2])], heartbeat_s=60)\n"
    "print(json.dumps({'code': r.exit_code}), flush=True)\n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _warmup_then_term(tmp_path, mode: str) -> tuple[subprocess.Popen[str], bool, list[str]]:  # type: ignore[no-untyped-def]
    proc = subprocess.Popen([sys.executable, "-c", _WARMUP, mode, str(tmp_path)], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    assert proc.stdout is not None
    workload = int(proc.stdout.readline())  # the workload runs (its pid)
    try:
        proc.send_signal(signal.SIGTERM)
        lines = []
        if mode == "own":
            lines.append(proc.stdout.readline())  # the caller's handler ran; the workload was left alone
            os.kill(workload, signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)  # on 6dd7d2e the orphan held the pipe: this timed out
        left_running = _alive(workload)
    finally:
        if _alive(workload):  # an orphan left running (on 6dd7d2e): do not leave it
            os.kill(workload, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, left_running, [*lines, *out.splitlines()]


def test_the_callers_own_handler_is_kept(tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc, left_running, lines = _warmup_then_term(tmp_path, "own")
    assert not left_running
    assert json.loads(lines[0]) == {"own": True}
    assert json.loads(lines[-1]) == {"code": 128 + signal.SIGTERM} and proc.returncode == 0
