"""What a batch insert stores is what was given, on both backends (issue 28: an import inserts its runs'
rows in one prepared round trip, PostgreSQL its items by COPY, every item's numbers encoded in one go
and split). Text COPY must escape (tab, newline, backslash), numbers whose names hold the split's own
``}, {`` are encoded one by one, and a run given twice in one batch is stored once."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import import_bundles
from zluda_runner.results.schema import ResultRow, RunRecord, canonical_json, content_id

AWKWARD = [
    ResultRow("tab\there", "pass", True, "a\\b\nc\rd", {"max_abs_err": 0.5, "b": None}),
    ResultRow("name}, {x", "fail", False, "}, {", {"}, {": 1.0, "x\n}, {\"y": 2.0}),
    ResultRow("empty", "skip", None, "", {}),
    ResultRow("unicode é ✓", "pass", True, "\\N", {"é": -0.0, "big": 1e300}),
    ResultRow("last", "fail", False, "tail\\", {"a": 1e-320}),
]


def _run(day: int, items: list[ResultRow]) -> RunRecord:
    run = RunRecord(kind="torch-ops", started_at=f"2025-08-{day:02d}T10:00:00.000000Z",
                    host={"gfx": "gfx1100"}, summary={"passed": 2, "failed": 2, "total": 4, "items": 5},
                    items=items)
    return dataclasses.replace(run, run_id=content_id(run))


def _stored_numbers(store: object, run_id: str) -> list[str]:
    with store._tx(write=False) as cur:  # type: ignore[attr-defined]
        sql = store._sql("SELECT numbers_json FROM items WHERE run_id = ? ORDER BY seq")  # type: ignore[attr-defined]
        cur.execute(sql, (run_id,))
        return [row[0] for row in cur.fetchall()]


def test_awkward_items_are_stored_as_given(store_url: str) -> None:
    run = _run(1, AWKWARD)  # a name holds "}, {": encoded one by one
    split = _run(2, [ResultRow(f"op{i}", "pass", True, "", {"e": i / 8}) for i in range(9)])
    with make_store(store_url).open() as store:
        assert store.insert_runs([run, split]) == (2, 0)
        got = store.get_runs([run.run_id, split.run_id])
        texts = [_stored_numbers(store, r.run_id) for r in (run, split)]
    assert got == [run, split]
    # the text kept is json.dumps(sort_keys=True) of each item's numbers, split or encoded one by one
    assert texts == [[json.dumps(i.numbers, sort_keys=True) for i in r.items] for r in (run, split)]


def test_a_run_given_twice_in_one_batch_is_stored_once(store_url: str) -> None:
    a, b, c = (_run(day, AWKWARD[:day]) for day in (1, 2, 3))
    with make_store(store_url).open() as store:
        assert store.insert_runs([a, a, b]) == (2, 1)
        assert store.insert_runs([b, c, c]) == (1, 2)
        assert store.get_runs([a.run_id, b.run_id, c.run_id]) == [a, b, c]  # each with its items, once


def test_an_imported_bundle_of_awkward_items_is_stored_as_exported(store_url: str, tmp_path: Path) -> None:
    """The import's own path (items checked and stored as columns, no record per item) stores what
    ``insert_runs`` does; items not written as the store keeps them (an int number, no detail) too."""
    plain = _run(4, AWKWARD)
    loose = _run(5, [dataclasses.replace(AWKWARD[0], numbers={"max_abs_err": 1.0}), *AWKWARD[1:]])
    written = loose.to_dict()
    written["items"][0]["numbers"]["max_abs_err"] = 1  # an int: read as 1.0, the run's id unchanged
    del written["items"][2]["detail"]  # "" when left out
    bundle = tmp_path / "b.jsonl"
    bundle.write_text(json.dumps({"format": "zluda-runner-results", "version": 1, "runs": 2}) + "\n"
                      + canonical_json({"run": plain.to_dict()}) + "\n" + json.dumps({"run": written}) + "\n",
                      encoding="utf-8")
    with make_store(store_url).open() as store:
        assert import_bundles(store, [bundle]) == (2, 0)
        assert store.get_runs([plain.run_id, loose.run_id]) == [plain, loose]
