"""`zluda-run --monitor` on the official Windows CPython under Wine: Wine has no GPU performance
counters (``\\GPU Engine``, ``\\GPU Adapter Memory``), so the PDH back end must say so in one
honest line, and the run must go on with the workload's own exit code, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.windows.test_wine_launch import fork  # noqa: F401 - the fork-shaped release fixture
from tests.windows.winpy import WinPython, winpath
from zluda_runner.telemetry.windows_pdh import NO_COUNTERS_HINT

pytestmark = pytest.mark.slow

PROBE = """\
import threading
from zluda_runner.telemetry.sampler import open_source
found = open_source()
print(type(found).__name__, "|", getattr(found, "reason", ""))
print("threads", len(threading.enumerate()))
"""


def test_pdh_says_why_there_is_no_gpu_telemetry(winpy: WinPython) -> None:
    out = winpy.run(["-c", PROBE])
    print(out.stdout)
    assert out.returncode == 0, out.stderr
    kind, _, reason = out.stdout.splitlines()[0].partition(" | ")
    assert kind == "NoTelemetry", out.stdout
    # the PDH status PdhOpenQueryW or PdhAddEnglishCounterW gave, then the hint saying where counters exist
    assert reason.endswith(f"): {NO_COUNTERS_HINT}") and "0x" in reason, reason
    assert out.stdout.splitlines()[1] == "threads 1"


def test_monitor_under_wine_is_one_honest_line_and_the_exit_code(
    new_cuda11_winpy, fork: Path, tmp_path: Path  # type: ignore[no-untyped-def]  # noqa: F811
) -> None:
    py: WinPython = new_cuda11_winpy(portable=False)
    out = py.zluda_run("--zluda-dir", winpath(fork), "--monitor", "run", py.exe, "-c",
                       "print('workload ran'); raise SystemExit(6)",
                       env={"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache")})
    assert out.returncode == 6, out.stdout + out.stderr
    assert out.stdout == "workload ran\n" and "Traceback" not in out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("GPU telemetry")]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("GPU telemetry: none (no Windows GPU performance counters here (")
    assert lines[0].endswith(f"{NO_COUNTERS_HINT})")
    assert out.stderr.rstrip().splitlines()[-1] == lines[0]  # last: no idle-GPU warning after it
