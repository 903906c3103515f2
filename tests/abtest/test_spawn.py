"""A side's run is the root of a process tree that ends with it: nothing it started outlives a
timeout or its own end, and it never waits for input nobody can type (POSIX: process groups)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from zluda_runner.abtest.run import ab_import_dir, run_recorded

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups (/proc)")

DEATH_LIMIT_S = 60.0  # a bound, not a timing: SIGKILL takes effect at once

# starts a grandchild that writes its pid and sleeps; exits, or sleeps too with "hold"
SPAWNER = textwrap.dedent(
    """
    import subprocess, sys, time
    from pathlib import Path
    pidfile = Path(sys.argv[1])
    subprocess.Popen([sys.executable, "-c", "import os, sys, time; from pathlib import Path; "
                      "Path(sys.argv[1] + '.tmp').write_text(str(os.getpid())); "
                      "os.replace(sys.argv[1] + '.tmp', sys.argv[1]); time.sleep(600)", str(pidfile)])
    while not pidfile.exists():
        time.sleep(0.01)
    if sys.argv[2] == "hold":
        time.sleep(600)
    """
)


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for a parent that is not us."""
    deadline = time.monotonic() + DEATH_LIMIT_S
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _run(tmp_path: Path, mode: str, timeout: float | None) -> tuple[int, str | None]:
    script = tmp_path / "spawner.py"
    script.write_text(SPAWNER)
    pidfile = tmp_path / "grandchild.pid"
    done = run_recorded([sys.executable, str(script), str(pidfile), mode], dict(os.environ), tmp_path / "run",
                        ab_import_dir(tmp_path / "import"), timeout=timeout)
    return int(pidfile.read_text()), done.error


def test_what_a_run_leaves_running_ends_with_it(tmp_path: Path) -> None:
    pid, error = _run(tmp_path, "exit", None)
    assert error is None
    assert _dead(pid), "the run's grandchild outlived it (it would hold the GPU into the next run)"


def test_a_timeout_ends_the_whole_tree(tmp_path: Path) -> None:
    # the timeout has to fire after the grandchild wrote its pid (two Python start-ups): 2 s first, and
    # where a loaded machine had not got that far, again with twice the room, so the verdict never
    # rests on how fast the machine is, only how long the test takes
    for timeout in (2.0, 4.0, 8.0, 16.0, 32.0):
        attempt = tmp_path / f"after-{timeout:g}s"
        attempt.mkdir()
        script = attempt / "spawner.py"
        script.write_text(SPAWNER)
        pidfile = attempt / "grandchild.pid"
        done = run_recorded([sys.executable, str(script), str(pidfile), "hold"], dict(os.environ),
                            attempt / "run", ab_import_dir(attempt / "import"), timeout=timeout)
        assert done.error == f"timed out after {timeout:g} s"
        if pidfile.exists():
            break
    assert pidfile.exists(), "the grandchild never started within 32 s"
    assert _dead(int(pidfile.read_text()))


def test_a_run_never_waits_for_input(tmp_path: Path) -> None:
    """Our stdin a pipe nobody writes to (a terminal nobody types at): the workload reads EOF."""
    script = tmp_path / "asks.py"
    script.write_text("input('continue? ')\n")
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        done = run_recorded([sys.executable, str(script)], dict(os.environ), tmp_path / "run",
                            ab_import_dir(tmp_path / "import"), timeout=DEATH_LIMIT_S)
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)
    assert done.exit_code == 1 and "EOFError" in done.stderr_tail


def test_a_script_without_a_shebang_runs_under_sh_as_zluda_run_runs_it(tmp_path: Path) -> None:
    script = tmp_path / "no-shebang.sh"
    script.write_text("echo hi \"$1\"\n")
    script.chmod(0o755)
    done = run_recorded([str(script), "there"], dict(os.environ), tmp_path / "run",
                        ab_import_dir(tmp_path / "import"))
    assert done.exit_code == 0 and done.error is None, done


def test_a_command_the_system_cannot_start_is_a_failed_run(tmp_path: Path) -> None:
    program = tmp_path / "other-machine.bin"
    program.write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"\0" * 56)  # a NUL in its first line: no script
    program.chmod(0o755)
    done = run_recorded([str(program)], dict(os.environ), tmp_path / "run",
                        ab_import_dir(tmp_path / "import"))
    assert done.exit_code is None and done.error == f"cannot start {program}: Exec format error"


IGNORING = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from zluda_runner.abtest.run import ab_import_dir, run_recorded

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    script = "import os, signal, time; os.kill(os.getppid(), signal.SIGTERM); time.sleep(0.5)"
    done = run_recorded([sys.executable, "-c", script], dict(os.environ), Path(sys.argv[1]) / "run",
                        ab_import_dir(Path(sys.argv[1]) / "import"))
    print("exit", done.exit_code, signal.getsignal(signal.SIGTERM) is signal.SIG_IGN)
    """
)


def test_a_sigterm_the_caller_ignores_stays_ignored(tmp_path: Path) -> None:
    """Only a signal whose default would end the process is taken over while a run waits."""
    done = subprocess.run([sys.executable, "-c", IGNORING, str(tmp_path)], capture_output=True, text=True,
                          timeout=DEATH_LIMIT_S, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exit 0 True"
