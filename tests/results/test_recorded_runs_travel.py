"""Every run the store takes can be exported and imported again (hunt of 2026-12-01).

On e29888c ``record_result`` stored what a Recordable's rows said as it came: 40 numbers on an item,
a 300-character number name, ``ok=1``, a number given as text, a verdict that is a number, a summary
``passed`` of 'lots', a start time in the future. ``results export`` wrote them, and
``results import`` refused the whole bundle for that one run (a bundle is checked whole); an int
past float's range made ``results show`` and ``export`` end in a traceback (OverflowError).
These tests fail there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import zluda_runner as api
from tests.results import reports
from zluda_runner import ResultRow, ResultRows
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import import_bundles
from zluda_runner.results.recording import record_report


class _Rows:
    def __init__(self, rows: ResultRows) -> None:
        self.rows = rows

    def result_rows(self) -> ResultRows:
        return self.rows


def _row(**kw: object) -> ResultRow:
    return ResultRow(**{"item": "a", "status": "pass", "ok": True, "detail": "", **kw})  # type: ignore[arg-type]


CASES = {
    "40 numbers": ResultRows((_row(numbers={f"k{i}": 1.0 for i in range(40)}),)),
    "a long number name": ResultRows((_row(numbers={"k" * 300: 1.0}),)),
    "NaN": ResultRows((_row(numbers={"x": float("nan")}),)),
    "an int past float": ResultRows((_row(numbers={"x": 10**400}),)),
    "a number as text": ResultRows((_row(numbers={"x": "1", "y": True}),)),
    "ok=1": ResultRows((_row(ok=1),)),
    "an item name not text": ResultRows((_row(item=5, detail=None),)),
    "a verdict that is a number": ResultRows((_row(),), {"verdict": 5, "agree": "yes"}),
    "a huge exit code": ResultRows((_row(),), {"exit_code": 1 << 40, "speed": float("inf")}),
    "40 summary fields": ResultRows((_row(),), {f"s{i}": i for i in range(40)}),
    "a summary count as text": ResultRows((_row(),), {"passed": "lots", "total": -3}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_recorded_run_exports_and_imports_again(tmp_path: Path, name: str) -> None:
    source = api.Options(results_db=str(tmp_path / "src.db"))
    recorded = api.record_result("probe", _Rows(CASES[name]), source, command=["probe"])
    assert recorded.recorded, recorded.warning
    shown = api.get_result(str(recorded.run_id), source)  # read back without a traceback
    assert shown.summary["passed"] == 1 and shown.summary["total"] == 1
    bundle = tmp_path / "b.jsonl"
    assert api.export_results(bundle, source) == 1
    with make_store(str(tmp_path / "dst.db")).open() as target:
        assert import_bundles(target, [bundle]) == (1, 0)
        [run] = target.get_runs([str(recorded.run_id)])
    assert run.to_dict() == json.loads(bundle.read_text(encoding="utf-8").splitlines()[1])["run"]


def test_what_the_rows_said_is_kept_as_far_as_a_run_can_hold_it(tmp_path: Path) -> None:
    source = api.Options(results_db=str(tmp_path / "src.db"))
    rows = ResultRows((_row(ok=1, numbers={"x": "1", "y": 2, "z": 10**400}), _row(item=7, ok=0, detail=None)),
                      {"verdict": 5, "agree": "yes", "exit_code": 3, "passed": "lots"})
    run = api.get_result(str(api.record_result("probe", _Rows(rows), source).run_id), source)
    first, second = run.items
    assert (first.ok, first.numbers) == (True, {"x": None, "y": 2.0, "z": None})
    assert (second.item, second.ok, second.detail) == ("7", False, "")
    assert run.summary == {"verdict": "5", "exit_code": 3, "passed": 1, "failed": 1, "total": 2, "items": 2}


def test_a_run_an_import_would_refuse_is_not_stored(tmp_path: Path) -> None:
    url = str(tmp_path / "src.db")
    out = record_report("torch-ops", reports.torch_ops(2), settings=Settings(cache_dir=tmp_path), db_url=url,
                        command=["probe"], host=reports.HOST, started_at="2999-01-01T00:00:00.000000Z")
    assert not out.recorded and out.warning and "started_at 2999-01-01T00:00:00.000000Z" in out.warning, out
