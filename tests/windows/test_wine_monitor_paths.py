"""`zluda-run --monitor --verify-load` on the official Windows CPython under Wine (issue 23): the
evidence from the process's own module list, then the same one honest telemetry line as a plain
``--monitor`` run (Wine has no GPU performance counters), the workload's exit code, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.windows.report_lines import read_verified
from tests.windows.test_wine_launch import fork  # noqa: F401 - the fork-shaped release fixture
from tests.windows.winpy import WinPython, winpath

pytestmark = pytest.mark.slow


def test_monitor_with_verify_load_under_wine(
    new_cuda11_winpy, fork: Path, tmp_path: Path  # type: ignore[no-untyped-def]  # noqa: F811
) -> None:
    py: WinPython = new_cuda11_winpy(portable=False)
    out = py.zluda_run("--zluda-dir", winpath(fork), "--json", "--monitor", "--verify-load", "run", py.exe,
                       "-c", "print('workload ran'); raise SystemExit(6)",
                       env={"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache")})
    print(out.stdout, out.stderr)
    assert out.returncode == 6, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    seen, verified = read_verified(out.stdout)
    assert seen.other == ("workload ran",)
    # the evidence: the process's own module list, every planned binding with a state
    assert (verified["exit_code"], verified["evidence"], verified["processes"]) == (6, "module list", 1)
    assert verified["bindings"] and {b["state"] for b in verified["bindings"]} <= {"taken", "unused"}
    lines = [line for line in out.stderr.splitlines() if line.startswith("GPU telemetry")]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("GPU telemetry: none (no Windows GPU performance counters here (")
    assert out.stderr.rstrip().splitlines()[-1] == lines[0]  # last: after the run, nothing follows
