"""zluda-run started with its stderr closed (``2>&-``, a service or cron job started so): the workload
runs, as it would without zluda-run (on 6c874bb the exec path ended in AttributeError on
``sys.stderr.flush()`` before the workload started, and --verify-load in an OSError on ``dup(2)``;
exit 1 with nothing said, for nowhere to say it)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX descriptors")

_EXEC = ("import os, sys\n"
         "from zluda_runner.launch.process import exec_process\n"
         "exec_process(['sh', '-c', 'echo ran; echo to-nowhere >&2; exit 5'], os.environ)\n")
_VERIFY = ("import json, os, sys\n"
           "from pathlib import Path\n"
           "from zluda_runner.launch.verify import verify_bindings\n"
           "r = verify_bindings(['sh', '-c', 'echo ran; echo to-nowhere >&2; exit 5'], os.environ,"
           " {'libcuda.so.1': Path('/nonexistent/libcuda.so.1')})\n"
           "print(json.dumps({'code': r.command_exit_code(), 'data': r.to_dict()}))\n")


def _without_stderr(code: str) -> subprocess.CompletedProcess[str]:
    argv = ["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-c", code]
    return subprocess.run(argv, stdout=subprocess.PIPE, text=True, timeout=120, check=False)


def test_the_exec_path_runs_the_workload_without_a_stderr() -> None:
    proc = _without_stderr(_EXEC)
    assert (proc.returncode, proc.stdout) == (5, "ran\n")


def test_verify_load_runs_the_workload_without_a_stderr() -> None:
    proc = _without_stderr(_VERIFY)
    lines = proc.stdout.splitlines()
    assert lines[0] == "ran" and proc.returncode == 0, proc.stdout
    report = json.loads(lines[1])
    assert report["code"] == 5 and report["data"]["ok"] is True
