"""``--verify-load`` reads how the workload really ended from its wait status, not from the number: a
workload's own ``exit 137`` is an exit (its code passed on, no "did not get past loading"), a crash is
a crash, and a ``kill`` the user sent zluda-run is the user's decision (its code passed on, 143), not
a failed load (on e29888c all three read as "killed by signal N": VERIFICATION FAILED, exit 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.golden import assert_golden
from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.launch.process import run_process_end
from zluda_runner.launch.verify import verify_bindings
from zluda_runner.report.verify_view import render_verification

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="LD_DEBUG and POSIX signals")

EXPECTED = {"libcuda.so.1": Path("/nonexistent/libcuda.so.1")}  # never requested by sh: "unused"


def test_an_exit_code_above_128_is_an_exit_not_a_signal() -> None:
    end = run_process_end(["sh", "-c", "exit 137"], os.environ)
    assert (end.exit_code, end.signal, end.sent_by_user) == (137, None, None)
    killed = run_process_end(["sh", "-c", "kill -KILL $$"], os.environ)
    assert (killed.exit_code, killed.signal, killed.sent_by_user) == (137, signal.SIGKILL, None)


@pytest.mark.parametrize("code", [129, 137, 139, 143])
def test_verify_load_passes_a_high_exit_code_on(code: int) -> None:
    result = verify_bindings(["sh", "-c", f"exit {code}"], os.environ, EXPECTED)
    assert result.signal is None and not result.died_loading and not result.failed
    assert result.command_exit_code() == code
    assert_golden("verify_load_high_exit", render_verification(result))  # a plain report: no failure said


def test_verify_load_still_fails_a_workload_killed_by_its_own_signal() -> None:
    result = verify_bindings(["sh", "-c", "kill -SEGV $$"], os.environ, EXPECTED)
    assert result.signal == signal.SIGSEGV and result.died_loading and not result.interrupted
    assert result.command_exit_code() == CHECK_FAILED
    assert_golden("verify_load_killed_by_signal", render_verification(result))  # by name (proctree.ended_by)


_WRAPPER = (
    "import json, os, sys\n"
    "from pathlib import Path\n"
    "from zluda_runner.launch.verify import verify_bindings\n"
    "from zluda_runner.report.verify_view import render_verification\n"
    "r = verify_bindings(['sh', '-c', 'echo ready; exec sleep 600'], os.environ,"
    " {'libcuda.so.1': Path('/nonexistent/libcuda.so.1')})\n"
    "print(json.dumps({'code': r.command_exit_code(), 'view': render_verification(r),\n"
    "                  'data': r.to_dict()}))\n"
)


def test_a_kill_sent_to_zluda_run_is_the_users_decision_not_a_failed_load() -> None:
    wrapper = subprocess.Popen([sys.executable, "-c", _WRAPPER], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True)  # our own pytest process group stays out of it
    assert wrapper.stdout is not None
    try:
        assert wrapper.stdout.readline().strip() == "ready"  # the workload runs, zluda-run waits on it
        wrapper.send_signal(signal.SIGTERM)  # forwarded to the workload, which dies of it
        out, _ = wrapper.communicate(timeout=120)
    finally:
        if wrapper.poll() is None:  # a failed test leaves nothing running: the whole session goes
            os.killpg(wrapper.pid, signal.SIGKILL)
            wrapper.wait()
    report = json.loads(out)
    assert report["code"] == 128 + signal.SIGTERM
    assert report["data"]["stopped_by"] == signal.SIGTERM and report["data"]["ok"] is True
    assert report["data"]["loader_errors"] == [] and report["data"]["signal"] == signal.SIGTERM
    assert_golden("launch-verify-stopped-by-sigterm", report["view"])  # interrupted; no failure said


_SPEWING = (
    "import json, os, sys\n"
    "from pathlib import Path\n"
    "from zluda_runner.launch.verify import verify_bindings\n"
    "from zluda_runner.report.verify_view import render_verification\n"
    "r = verify_bindings(['sh', '-c', 'while :; do echo line >&2; done'], os.environ,"
    " {'libcuda.so.1': Path('/nonexistent/libcuda.so.1')})\n"
    "print(json.dumps({'code': r.command_exit_code(), 'view': render_verification(r),\n"
    "                  'data': r.to_dict()}))\n"
)


def test_a_closed_stderr_ends_the_workload_as_it_would_without_zluda_run() -> None:
    """``zluda-run --verify-load -- CMD 2>&1 | head``: on 6d84eda zluda-run's pump died on EPIPE and the
    workload blocked for ever on the full pipe; now its next write fails (SIGPIPE), as without us."""
    wrapper = subprocess.Popen([sys.executable, "-c", _SPEWING], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert wrapper.stdout is not None and wrapper.stderr is not None
    try:
        assert wrapper.stderr.readline() == b"line\n"
        wrapper.stderr.close()  # `| head -1` has what it wanted
        wrapper.stderr = None
        out, _ = wrapper.communicate(timeout=60)  # on 6d84eda: a hang
        assert wrapper.returncode == 0
    finally:
        if wrapper.poll() is None:
            os.killpg(wrapper.pid, signal.SIGKILL)
            wrapper.wait()
    report = json.loads(out)
    assert report["code"] == 128 + signal.SIGPIPE and report["data"]["stopped_by"] == signal.SIGPIPE
    assert report["data"]["ok"] is True and report["data"]["loader_errors"] == []
    assert_golden("launch-verify-stopped-by-sigpipe", report["view"])  # interrupted; no failure said


def test_the_users_own_missing_preload_is_said_not_a_failed_load() -> None:
    """A ``LD_PRELOAD=libtcmalloc.so.4`` from a shell profile, not installed: ld.so says it ignored it and
    the run went on (exit 0); on 8fa57a6 that line made every --verify-load 'did not get past loading'."""
    env = {**os.environ, "LD_PRELOAD": "libzluda-runner-test-absent.so.4"}
    result = verify_bindings(["sh", "-c", "exit 0"], env, EXPECTED)
    assert not result.died_loading and not result.failed and result.command_exit_code() == 0
    assert result.loader_errors == [] and len(result.loader_warnings) == 1
    assert "libzluda-runner-test-absent.so.4" in result.loader_warnings[0]
    view = render_verification(result)
    said = [line for line in view.splitlines() if line.startswith("  ! ")]
    assert len(said) == 1 and "libzluda-runner-test-absent.so.4" in said[0]  # ld.so's line, passed on
    plain = "\n".join(line for line in view.splitlines() if not line.startswith("  ! "))
    assert_golden("verify_load_high_exit", plain)  # otherwise the report of a run that went well


def test_a_planned_preload_that_cannot_be_loaded_still_fails() -> None:
    planned = {"libzluda-runner-test-shim.so.1": Path("/nonexistent/libzluda-runner-test-shim.so.1")}
    env = {**os.environ, "LD_PRELOAD": "libzluda-runner-test-shim.so.1"}
    result = verify_bindings(["sh", "-c", "exit 0"], env, planned)
    assert result.died_loading and result.failed and result.command_exit_code() == CHECK_FAILED
    assert "cannot be preloaded" in result.loader_errors[0] and result.loader_warnings == []


def test_plan_verify_load_whose_proof_run_failed_proves_nothing(tmp_path: Path, monkeypatch) -> None:
    """`plan --verify-load` of a binary target from a zluda-run whose own interpreter has no torch: the
    proof run (`python -c "import torch"`) died with ModuleNotFoundError, and 7859508 said "verdict: ok",
    exit 0 (every binding "unused"). Nothing was proven: exit 3, every binding unproven."""
    from click.testing import CliRunner

    from zluda_runner.cli import main_group
    from zluda_runner.devtools.standin import build_release, libs_from_spec

    release = build_release(libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}}), tmp_path / "rel",
                            build_dir=tmp_path / "build")
    no_torch = tmp_path / "python"
    no_torch.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    no_torch.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(no_torch))
    args = ["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release), "--no-record",
            "--verify-load", "--json", "plan", "--", "/bin/true"]
    res = CliRunner().invoke(main_group, args, catch_exceptions=False)
    assert res.exit_code == CHECK_FAILED, res.output
    evidence = json.loads(res.stdout)["verify_load"]
    assert evidence["ok"] is False and evidence["exit_code"] == 1 and evidence["unproven"]
    assert {b["state"] for b in evidence["bindings"]} == {"unproven"}
