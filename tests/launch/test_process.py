"""run_process / exec_process: exit codes like a shell, signals forwarded, argv untouched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from zluda_runner.core.errors import CommandNotExecutableError, CommandNotFoundError, LaunchError
from zluda_runner.launch.process import exit_status, resolve_command, run_process

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "launch"


def test_exit_codes_pass_through() -> None:
    assert run_process(["true"], os.environ) == 0
    assert run_process(["sh", "-c", "exit 3"], os.environ) == 3


def test_signal_death_is_128_plus_signum() -> None:
    assert run_process(["sh", "-c", "kill -KILL $$"], os.environ) == 128 + signal.SIGKILL
    assert run_process(["sh", "-c", "kill -TERM $$"], os.environ) == 128 + signal.SIGTERM
    assert exit_status(-signal.SIGSEGV) == 139


def test_argv_passed_untouched(tmp_path: Path) -> None:
    out = tmp_path / "args"
    args = ["a b", "", "$HOME", "--", "*"]
    code = run_process(
        [sys.executable, "-c", "import sys,json; open(sys.argv[1],'w').write(json.dumps(sys.argv[2:]))",
         str(out), *args],
        os.environ,
    )
    assert code == 0
    assert out.read_text() == __import__("json").dumps(args)


def test_env_is_the_childs_whole_environment(tmp_path: Path) -> None:
    out = tmp_path / "env"
    env = {"PATH": os.environ["PATH"], "ZLUDA_TEST_MARK": "42"}
    code = run_process(["sh", "-c", f'echo "$ZLUDA_TEST_MARK:$HOME" > {out}'], env)
    assert code == 0
    assert out.read_text().strip() == "42:"


def test_command_not_found_is_127_and_named() -> None:
    with pytest.raises(CommandNotFoundError) as info:
        run_process(["zluda-no-such-command-xyz"], os.environ)
    assert info.value.exit_code == 127
    assert "zluda-no-such-command-xyz" in info.value.message
    assert "PATH" in (info.value.hint or "")


def test_command_looked_up_on_the_given_path(tmp_path: Path) -> None:
    tool = tmp_path / "mytool"
    tool.write_text("#!/bin/sh\nexit 5\n")
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    assert resolve_command("mytool", env) == str(tool)
    assert run_process(["mytool"], env) == 5
    with pytest.raises(CommandNotFoundError):
        run_process(["mytool"], {**os.environ, "PATH": "/nonexistent"})


def test_not_executable_is_126(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    with pytest.raises(CommandNotExecutableError) as info:
        run_process([str(script)], os.environ)
    assert info.value.exit_code == 126
    env = {**os.environ, "PATH": str(tmp_path)}
    with pytest.raises(CommandNotExecutableError):
        run_process(["script.sh"], env)
    with pytest.raises(CommandNotExecutableError):
        run_process([str(tmp_path)], os.environ)  # a folder


def test_timeout_kills_the_child() -> None:
    with pytest.raises(LaunchError) as info:
        run_process(["sleep", "30"], os.environ, timeout=0.2)
    assert info.value.kind == "launch" and " 0.2 s " in info.value.message  # the limit it ran past


WRAPPER = (
    "import os, sys\n"
    "from zluda_runner.launch.process import run_process\n"
    "sys.exit(run_process(sys.argv[1:], os.environ))\n"
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1, signal.SIGINT])
def test_signals_sent_to_the_wrapper_reach_the_child(tmp_path: Path, signum: signal.Signals) -> None:
    report = tmp_path / "report"
    wrapper = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, sys.executable, str(FIXTURES / "sig_child.py"), str(report)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # our own pytest process group stays out of it
    )
    assert wrapper.stdout is not None
    assert wrapper.stdout.readline().strip() == "ready"  # the child's handlers are installed
    wrapper.send_signal(signum)
    assert wrapper.wait(timeout=60) == 7  # the child's exit code, passed back
    assert report.read_text() == signum.name
