"""The benchmarks cannot rot: each one runs with ``--smoke`` (a tiny size, seconds) and prints its figures
and the floor they are measured against; a benchmark that breaks fails the suite (issue 28). One whose
prerequisites are missing here (Wine and the Windows wheels for benchmarks/wine_start.py) says so on its
first line (``skipped: REASON``): skipped with that reason, as tests/windows are, and a failure in CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(REPO.glob("benchmarks/*.py"))
FIGURE = re.compile(r"\d+(\.\d+)? ?(s|ms|µs|ns/call|MB/s|%)\b")


def test_there_are_benchmarks() -> None:
    assert len(BENCHMARKS) >= 7, BENCHMARKS


@pytest.mark.slow
@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_runs_with_smoke(path: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(path), "--smoke"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = (proc.stdout.splitlines() or [""])[0]
    require(not first.startswith("skipped:"), f"{path.name}: {first}")
    floors = [line for line in proc.stdout.splitlines() if "floor" in line.lower()]
    assert any(FIGURE.search(line) for line in floors), f"no floor with its figure:\n{proc.stdout}"
    # a figure's line may name the floor it is measured against ("4.4x the floor"); the floor's own
    # line starts with the word
    figures = [line for line in proc.stdout.splitlines()
               if FIGURE.search(line) and not line.lstrip().lower().startswith("floor")]
    assert figures, f"no figure beside the floor:\n{proc.stdout}"
