"""Summary fields have types, and a run can be removed (issue 20, nothing-lost item 10).

On 5c673db a bundle whose run said ``"total": "x"`` was stored or ended in a traceback, and one stored
run with such a summary made every later ``results matrix`` (and the per-GPU summaries) crash, with
no command to remove it. These tests fail there.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import import_bundles
from zluda_runner.results.queries import summary_for_gpu
from zluda_runner.results.recording import record_report
from zluda_runner.results.schema import ResultsStoreError, RunRecord, content_id


def _cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path / "c"), "--results-db", url,
                                             "results", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def _record(url: str, tmp_path: Path, n: int) -> str:
    out = record_report("torch-ops", reports.torch_ops(10, {2}), settings=Settings(cache_dir=tmp_path),
                        db_url=url, command=["zluda-run", "probe", str(n)], host=reports.HOST,
                        started_at=f"2025-05-0{n}T10:00:00.000000Z", release=reports.FORK,
                        target=reports.TORCH_118)
    assert out.recorded and out.run_id, out.warning
    return out.run_id


def test_a_stored_run_with_a_text_total_does_not_break_the_views_and_can_be_deleted(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    good, bad = _record(url, tmp_path, 1), _record(url, tmp_path, 2)
    with sqlite3.connect(url) as conn:  # what another tool (or an old import) left in the store
        conn.execute("UPDATE runs SET summary_json = ? WHERE run_id = ?",
                     (json.dumps({"passed": "many", "failed": [1], "total": "x", "verdict": 3}), bad))
    odd = _record(url, tmp_path, 3)
    with sqlite3.connect(url) as conn:
        conn.execute("UPDATE runs SET host_json = '[1]', release_json = '7', command_json = '\"x\"',"
                     " target_json = 'null' WHERE run_id = ?", (odd,))
    for args in (("matrix",), ("list",), ("show", bad[:12]), ("diff", good[:12], bad[:12]),
                 ("matrix", "--json")):
        code, out = _cli(tmp_path, url, *args)
        assert code == 0, (args, out)
    assert summary_for_gpu("gfx1100", db_url=url)[0].total == 10  # the bad run counts nothing
    code, out = _cli(tmp_path, url, "show", odd[:12])
    assert code == 0 and "op002.fp16" in out, out
    code, out = _cli(tmp_path, url, "delete", bad[:12])
    assert code == 0 and bad[:12] in out, out
    with make_store(url).open() as store:
        assert [r.run_id for r in store.list_runs()] == [good, odd]
        assert store.get_runs([bad]) == []
    code, out = _cli(tmp_path, url, "delete", bad[:12])
    assert code == 1 and "no run" in out


@pytest.mark.parametrize(("field", "value"), [
    ("total", "x"), ("passed", -1), ("failed", 1.5), ("items", True), ("total", 10**30),
    ("verdict", 3), ("agree", "yes"), ("exit_code", "0"),
])
def test_a_bundle_with_a_mistyped_summary_is_refused_naming_the_line(
        tmp_path: Path, field: str, value: object) -> None:
    run = RunRecord(kind="torch-ops", started_at="2025-05-01T10:00:00.000000Z",
                    summary={"passed": 1, "failed": 0, "total": 1, "items": 1, field: value})
    run = dataclasses.replace(run, run_id=content_id(run))
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps({"format": "zluda-runner-results", "version": 1}) + "\n"
                    + json.dumps({"run": run.to_dict()}) + "\n", encoding="utf-8")
    with make_store(str(tmp_path / "s" / "results.db")).open() as store:
        with pytest.raises(ResultsStoreError, match=rf"line 2: summary {field} must be"):
            import_bundles(store, [path])
        assert len(store.list_runs()) == 0
