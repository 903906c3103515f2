"""poc's and ab's numbers are checked before anything runs, by their annotations (core/argcheck): NaN
passes every ``<=`` test (click's ranges too), so a NaN timeout never fired, a NaN interval spun the
sampler and a NaN tolerance wrote a bare NaN into the JSON report; ``--runs`` is bounded (every run's
record stays in memory)."""

from __future__ import annotations

import inspect
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import zluda_runner as zr
from zluda_runner.core import argcheck
from zluda_runner.core.argcheck import MAX_RUNS, ArgumentValueError
from zluda_runner.core.errors import HostError

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(("parameter", "value"), [
    ("runs", 0), ("runs", MAX_RUNS + 1), ("timeout", NAN), ("timeout", -1.0), ("interval", NAN),
    ("interval", INF), ("rtol", NAN), ("atol", -1e-3), ("min_speedup", NAN),
])
def test_poc_refuses_a_number_that_means_nothing(tmp_path: Path, parameter: str, value: float) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(ArgumentValueError, match=rf"^run_poc\({parameter}=\.\.\.\) must be "):
        zr.run_poc([sys.executable, "-c", f"open({str(marker)!r}, 'w')"], native=True, **{parameter: value})
    assert not marker.exists()


def test_poc_takes_what_is_meant() -> None:
    tests = argcheck._tests_of(inspect.unwrap(zr.run_poc))
    fine = {"runs": MAX_RUNS, "timeout": 1e9, "rtol": 0.0, "atol": 1e-3, "min_speedup": 0.0, "interval": 0.01}
    assert {name: tests[name][0](value) for name, value in fine.items()} == dict.fromkeys(fine)


@pytest.mark.parametrize("kwargs", [{"timeout": NAN}, {"rtol": NAN}, {"atol": INF}, {"runs": MAX_RUNS + 1}])
def test_ab_refuses_before_running(tmp_path: Path, kwargs: dict[str, float]) -> None:
    marker = tmp_path / "ran"
    side = f"{sys.executable} -c \"open({str(marker)!r}, 'w')\""
    with pytest.raises(ArgumentValueError):
        zr.run_ab(a_command=side, b_command=side, **kwargs)  # type: ignore[arg-type]
    assert not marker.exists()


def test_the_json_error_is_strict_json() -> None:
    done = subprocess.run([sys.executable, "-m", "zluda_runner", "--json", "poc", "--native", "--rtol", "nan",
                           "--", "true"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr  # click's usage error: --rtol's type

    def strict(word: str) -> None:
        raise ValueError(f"not JSON: {word}")

    error = json.loads(done.stdout, parse_constant=strict)
    assert error["exit_code"] == 2 and "--rtol" in error["error"] and "nan" in error["error"]


def test_a_reference_that_does_not_exist_is_refused_before_any_run(tmp_path: Path) -> None:
    """It failed as a run, after the N runs of the workload (minutes each) had been made for nothing."""
    from zluda_runner.api.poc import run_poc

    marker = tmp_path / "ran"
    with pytest.raises(HostError) as refused:
        run_poc([sys.executable, "-c", f"open({str(marker)!r}, 'w')"], native=True,
                reference=f"{tmp_path / 'no-such-python'} infer.py")
    missing = tmp_path / "no-such-python"
    assert refused.value.message == f"the reference: {missing} was not found (not a file, not on PATH)"
    assert not marker.exists()


@pytest.mark.parametrize("side", ["a", "b"])
def test_an_ab_command_that_does_not_exist_is_refused_before_any_run(tmp_path: Path, side: str) -> None:
    marker = tmp_path / "ran"
    touch = f"{sys.executable} -c \"open({str(marker)!r}, 'w')\""
    missing = str(tmp_path / "no such program")
    a, b = (repr(missing), touch) if side == "a" else (touch, repr(missing))
    done = subprocess.run([sys.executable, "-m", "zluda_runner", "--json", "ab", "--runs", "1", "--a-cmd", a,
                           "--b-cmd", b], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    error = json.loads(done.stdout)
    assert error["error"] == f"--{side}-cmd: {missing} was not found (not a file, not on PATH)"
    assert error["hint"] == f"give --{side}-cmd a program that exists here: a path or a name on PATH"
    assert not marker.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.parametrize("command", ["poc", "ab"])
def test_a_full_temporary_folder_is_an_error_not_a_traceback(tmp_path: Path, command: str) -> None:
    """Files limited to 1 KiB (as a full disk): the record folders cannot be prepared; it said so in a
    traceback (fsutil's OSError), and left the temporary folder behind."""
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    temp = tmp_path / "tmp"
    temp.mkdir()
    sides = (["--native", "--", sys.executable, "-c", "pass"] if command == "poc"
             else ["--a-cmd", sys.executable, "--b-cmd", sys.executable])
    done = subprocess.run([sys.executable, "-m", "zluda_runner", "--json", command, "--runs", "1", *sides],
                          capture_output=True, text=True, timeout=120, check=False, preexec_fn=limited,
                          env={**os.environ, "TMPDIR": str(temp)})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    error = json.loads(done.stdout)
    assert error["error"] == f"cannot prepare the record folders in {temp}: File too large"
    assert list(temp.iterdir()) == []
