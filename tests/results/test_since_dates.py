"""``--since`` is a real date, and a time written with ``Z`` keeps that minute's runs (hunt of 2026-12-01).

On e29888c ``--since 2025-02-30`` (or 2025-99-99) was taken as it came and matched nothing, without a
word; ``--since 2025-08-01T10:00Z`` compared as text after a run started at 10:00:30 (``Z`` > ``:``),
so that minute's runs were left out. These tests fail there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.results.recording import record_report


def _cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(tmp_path / "c"),
                                             "--results-db", url, "results", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = str(tmp_path / "s" / "results.db")
    for n, when in enumerate(("2025-08-01T09:59:59.900000Z", "2025-08-01T10:00:30.000000Z")):
        assert record_report("torch-ops", reports.torch_ops(2), settings=Settings(cache_dir=tmp_path),
                             db_url=url, command=["zluda-run", str(n)], host=reports.HOST,
                             started_at=when).recorded
    return url


@pytest.mark.parametrize("since", ["2025-02-30", "2025-99-99", "2025-08-01T25:00", "2025-08-01T10:61"])
@pytest.mark.parametrize("command", ["list", "matrix", "export"])
def test_a_date_that_does_not_exist_is_an_error(url: str, tmp_path: Path, since: str, command: str) -> None:
    args = [command, "--since", since] + ([str(tmp_path / "b.jsonl")] if command == "export" else [])
    code, out = _cli(tmp_path, url, *args)
    assert code == 1, out
    error = json.loads(out)
    assert error["error"] == f"--since {since!r} is not a date" and "YYYY-MM-DD" in error["hint"], error
    assert not (tmp_path / "b.jsonl").exists()


@pytest.mark.parametrize("since", ["2025-08-01T10:00Z", "2025-08-01T10:00", "2025-08-01 10:00:00Z",
                                   "2025-08-01T10:00:30Z"])
def test_a_time_with_or_without_z_keeps_that_minutes_runs(url: str, tmp_path: Path, since: str) -> None:
    code, out = _cli(tmp_path, url, "list", "--since", since)
    assert code == 0, out
    assert [r["started_at"] for r in json.loads(out)["runs"]] == ["2025-08-01T10:00:30.000000Z"]
