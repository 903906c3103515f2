"""The workload zluda-run becomes (``exec``) gets SIGPIPE and SIGXFSZ at their defaults, as a shell's
children do: on e29888c it inherited Python's "ignored", so ``zluda-run -- CMD | head`` never ended a
CMD that writes on (EPIPE ignored, no SIGPIPE), and ``ulimit -f`` did not stop one either."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from zluda_runner.launch.process import run_process

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX exec and signals")

_EXEC = ("import os, sys\n"
         "from zluda_runner.launch.process import exec_process\n"
         "exec_process(sys.argv[1:], os.environ)\n")
_LOOP = ["sh", "-c", "while :; do echo y; done"]  # sh's echo ignores a write error: only SIGPIPE ends it


def _reader_goes_away(argv: list[str]) -> int:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline() == b"y\n"
        proc.stdout.close()  # `| head -1` has what it wanted
        return proc.wait(timeout=60)  # on e29888c: the loop went on, this timed out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_exec_d_workload_ends_when_its_reader_goes_away() -> None:
    assert _reader_goes_away([sys.executable, "-c", _EXEC, *_LOOP]) == -signal.SIGPIPE


def test_run_process_children_too() -> None:
    code = ("import os, sys\nfrom zluda_runner.launch.process import run_process\n"
            "sys.exit(run_process(sys.argv[1:], os.environ))\n")
    assert _reader_goes_away([sys.executable, "-c", code, *_LOOP]) == 128 + signal.SIGPIPE


def test_the_file_size_limit_stops_the_exec_d_workload(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # the limit is set after Python's imports, in the process that execs: nothing of ours is written under it
    limited = ("import os, resource, sys\n"
               "from zluda_runner.launch.process import exec_process\n"
               "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
               "exec_process(sys.argv[1:], os.environ)\n")
    target = tmp_path / "big"
    argv = [sys.executable, "-c", limited, "dd", "if=/dev/zero", f"of={target}", "bs=4096", "count=4"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    assert run_process(argv, env) == 128 + signal.SIGXFSZ
    assert target.stat().st_size == 4096
