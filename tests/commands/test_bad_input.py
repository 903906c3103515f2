"""Every command, given bad input through the real console script, answers with a message and an
exit code from the project's table, never a Python traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zluda_runner.commands import COMMAND_TABLE
from zluda_runner.core import exitcodes

HUNG = -999
ALLOWED = {exitcodes.ERROR, exitcodes.USAGE, exitcodes.CHECK_FAILED, exitcodes.NOT_FOUND,
           exitcodes.NOT_EXECUTABLE}


def _zluda_run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update({
        "ZLUDA_RUNNER_CACHE": str(tmp_path / "cache"),
        "ZLUDA_RUNNER_MIRROR": "http://127.0.0.1:9",  # nothing listens: downloads fail at once
        "NO_COLOR": "1",
    })
    env.pop("ZLUDA_RUNNER_MANIFEST", None)
    try:
        return subprocess.run(
            [sys.executable, "-m", "zluda_runner", *args],
            capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:  # a hang is a failure of its own, reported as such
        return subprocess.CompletedProcess(exc.cmd, -999, "", f"hung for {exc.timeout} s")


def _bad_cases(tmp_path: Path) -> list[list[str]]:
    missing = str(tmp_path / "missing")
    not_a_dir = "/etc/passwd"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(os.urandom(4096))
    cases = [[name, "--no-such-option"] for name in sorted(COMMAND_TABLE)]
    cases += [
        ["relases"],
        ["inspect", missing],
        ["inspect", not_a_dir],
        ["inspect", str(garbage)],
        ["inspect", "--python", not_a_dir],
        ["status", "--torch-lib", not_a_dir],
        ["restore", "--torch-lib", not_a_dir],
        ["status", "--torch-lib", missing],
        ["restore", "--torch-lib", missing, "--json"],
        ["trace-report", missing],
        ["trace-report", str(garbage)],
        ["probe", "--libcuda", not_a_dir],
        ["probe", "--libcuda", missing],
        ["fetch", "no-such-release"],
        ["fetch", "--archive", missing, "upstream-v6"],
        ["releases", "--cuda", "banana"],
        ["releases", "--hip", "seven"],
        ["--manifest", "/dev/null", "releases"],
        ["--manifest", str(nested), "releases"],
        ["--manifest", str(garbage), "releases", "--json"],
        ["--manifest", missing, "releases"],
        ["cache", "clean", "../../etc"],
        ["results", "show", "no-such-run"],
        ["results", "import", str(garbage)],
        ["results", "diff", "a", "b"],
        ["--zluda-dir", missing, "plan", "--", "true"],
        ["--zluda-dir", not_a_dir, "plan", "--", "true"],
        ["--zluda-dir", missing, "--", "no-such-program-here"],
        ["plan", "--", str(garbage)],
        ["ab", "--runs", "0", "--", "x.py"],
        ["warmup"],
        ["doctor", "--root", missing],
        ["doctor", "--root", not_a_dir, "--json"],
    ]
    # a FIFO as the manifest must not hang (the timeout above would fail the test)
    cases.append(["--manifest", str(fifo), "releases"])
    return cases


def test_no_traceback_for_bad_input(tmp_path: Path) -> None:
    problems = []
    for args in _bad_cases(tmp_path):
        proc = _zluda_run(args, tmp_path)
        output = proc.stdout + proc.stderr
        if proc.returncode == HUNG:
            problems.append(f"{args}: hung")
        elif "Traceback (most recent call last)" in output:
            problems.append(f"{args}: traceback\n{output[-1500:]}")
        elif proc.returncode not in ALLOWED:
            problems.append(f"{args}: exit {proc.returncode}\n{output[-500:]}")
        elif not output.strip():
            problems.append(f"{args}: exit {proc.returncode} with no message")
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("args", [["releases", "--no-such-option"], ["relases"], ["inspect", "/etc/passwd"]])
def test_errors_are_json_with_json(args: list[str], tmp_path: Path) -> None:
    proc = _zluda_run(["--json", *args], tmp_path)
    assert proc.returncode in ALLOWED
    data = json.loads(proc.stdout)
    assert data["error"] and data["hint"] and data["exit_code"] == proc.returncode


def test_trace_report_of_a_folder_without_a_trace_is_an_error(tmp_path: Path) -> None:
    proc = _zluda_run(["trace-report", str(tmp_path)], tmp_path)
    assert proc.returncode == exitcodes.ERROR and "hint:" in proc.stderr, proc.stderr
    error = json.loads(_zluda_run(["--json", "trace-report", str(tmp_path)], tmp_path).stdout)
    assert (error["kind"], error["exit_code"]) == ("trace", exitcodes.ERROR), error
    assert str(tmp_path) in error["error"], error  # the folder that holds none
