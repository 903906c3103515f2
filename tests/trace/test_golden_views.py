"""The trace report view, whole, against its golden file (tests/golden.py), at 80 columns: the upstream
tracer's log folder of three python3.11 processes (tests/fixtures/probe/zluda_logs/zluda_trace)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.golden import assert_golden
from zluda_runner.cli import main_group

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "probe" / "zluda_logs" / "zluda_trace"


def test_trace_report_view(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(LOGS, tmp_path / "zluda_log")
    out = CliRunner().invoke(main_group, ["--cache-dir", "c", "trace-report", "zluda_log"],
                             env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert_golden("trace-report", out.output, tmp=tmp_path)
