"""``results diff --json`` (and ``show --json``) print JSON, never ``Infinity`` (issue 20, nothing-lost
item 24). On 5c673db a timing of 5e-324 s against 1 s gave a change of inf, printed as ``Infinity``;
a stored Infinity in an item's numbers came out the same way. These tests fail there."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import import_bundles
from zluda_runner.results.schema import ResultRow, ResultsStoreError, RunRecord, content_id


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _ab(day: int, median_a: float) -> RunRecord:
    run = RunRecord(kind="ab", started_at=f"2025-08-0{day}T10:00:00.000000Z", items=[
        ResultRow("timing:generate", "faster:B", None, "", {"median_a_s": median_a, "median_b_s": 1.0}),
        ResultRow("output:logits", "agree", True, "", {"max_abs_error": 1e-3}),
    ])
    return dataclasses.replace(run, run_id=content_id(run))


def _cli(tmp_path: Path, url: str, *args: str) -> str:
    argv = ["--cache-dir", str(tmp_path / "c"), "--results-db", url, "--json", "results", *args]
    result = CliRunner().invoke(main_group, argv)
    assert result.exit_code == 0 and result.exception is None, (result.output, result.exception)
    return result.output


def test_diff_json_of_an_overflowing_speed_change_is_json(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    a, b, c = _ab(1, 5e-324), _ab(2, 1.0), _ab(3, 2.0)
    with make_store(url).open() as store:
        store.insert_runs([a, b, c])
    diff = _strict(_cli(tmp_path, url, "diff", a.run_id[:12], b.run_id[:12]))
    assert diff["speed"] == []  # no finite change to report
    diff = _strict(_cli(tmp_path, url, "diff", b.run_id[:12], c.run_id[:12]))
    assert [(s["side"], s["change"]) for s in diff["speed"]] == [("A", 1.0)]  # a real change still is


def test_a_stored_infinity_is_not_printed(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    a, b = _ab(1, 1.0), _ab(2, 1.5)
    with make_store(url).open() as store:
        store.insert_runs([a, b])
    with sqlite3.connect(url) as conn:  # what another tool (or an older zluda-runner) left there
        conn.execute("UPDATE items SET numbers_json = ? WHERE run_id = ? AND seq = 0",
                     ('{"median_a_s": Infinity, "median_b_s": NaN}', b.run_id))
    shown = _strict(_cli(tmp_path, url, "show", b.run_id[:12]))
    assert shown["run"]["items"][0]["numbers"] == {"median_a_s": None, "median_b_s": None}
    _strict(_cli(tmp_path, url, "diff", a.run_id[:12], b.run_id[:12]))


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e999", "1" + "0" * 400])
def test_a_bundle_with_a_number_json_cannot_print_is_refused(tmp_path: Path, number: str) -> None:
    run = _ab(1, 1.0).to_dict()
    line = json.dumps({"run": run}).replace('"median_a_s": 1.0', f'"median_a_s": {number}')
    path = tmp_path / "b.jsonl"
    path.write_text('{"format": "zluda-runner-results", "version": 1}\n' + line + "\n", encoding="utf-8")
    with make_store(str(tmp_path / "s" / "results.db")).open() as store, pytest.raises(
            ResultsStoreError) as caught:
        import_bundles(store, [path])
    assert f"{path}, line 2: " in caught.value.message
    assert "null" in caught.value.message  # JSON's one non-number
