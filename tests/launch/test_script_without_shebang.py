"""An executable text file with no ``#!`` line runs as a /bin/sh script, as a shell (and POSIX execvp)
runs it: on 7ca2eec ``zluda-run ./run.sh`` of such a file failed with "Exec format error" (126) although
its plan said ok. A binary for another machine keeps its error."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zluda_runner.core.errors import CommandNotExecutableError
from zluda_runner.launch.process import run_process

pytestmark = pytest.mark.skipif(sys.platform == "win32" or not Path("/bin/sh").exists(), reason="POSIX sh")

_EXEC = ("import os, sys\n"
         "from zluda_runner.launch.process import exec_process\n"
         "exec_process(sys.argv[1:], os.environ)\n")


def _script(folder: Path) -> Path:
    script = folder / "sp ace ü" / "run me.sh"  # no #! line; spaces and unicode in its path
    script.parent.mkdir()
    script.write_text('echo "args:$#:$1:$2"\nexit 6\n')
    script.chmod(0o755)
    return script


def test_run_process_runs_it_with_sh(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert run_process([str(_script(tmp_path)), "a b", "c"], {"PATH": "/usr/bin:/bin"}) == 6
    assert capfd.readouterr().out == "args:2:a b:c\n"


def test_exec_process_runs_it_with_sh(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _EXEC, str(_script(tmp_path)), "a b", "c"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert (proc.returncode, proc.stdout) == (6, "args:2:a b:c\n"), proc.stderr


def test_a_binary_the_kernel_refuses_is_still_126(tmp_path: Path) -> None:
    blob = tmp_path / "other-machine"
    blob.write_bytes(b"\x7fELF\x01\x02\x03\x00" + bytes(200))  # a NUL in its first line: not a script
    blob.chmod(0o755)
    with pytest.raises(CommandNotExecutableError) as caught:
        run_process([str(blob)], {"PATH": "/usr/bin:/bin"})
    assert caught.value.exit_code == 126
    proc = subprocess.run([sys.executable, "-c", _EXEC, str(blob)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode != 0 and os.strerror(errno.ENOEXEC) in proc.stderr  # the kernel's refusal
