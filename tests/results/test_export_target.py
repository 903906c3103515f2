"""An export never writes over the store it reads (hunt of 2026-12-01).

On e29888c ``zluda-run results --results-db runs.db export runs.db`` (a slip of the hand) replaced the
store with the bundle: every later command said "file is not a database"; an export onto its ``-wal``
replaced the log of the open store. (A symlink to the store is refused too: the name is the store's.)
These tests fail there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import make_store
from zluda_runner.results.recording import record_report


def _cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(tmp_path / "c"),
                                             "--results-db", url, "results", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


@pytest.mark.parametrize("onto", ["store", "relative", "symlink", "wal"])
def test_an_export_onto_the_store_is_refused_and_the_store_kept(tmp_path: Path, onto: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "runs.db"
    assert record_report("torch-ops", reports.torch_ops(3), settings=Settings(cache_dir=tmp_path),
                         db_url=str(store), command=["zluda-run", "probe"], host=reports.HOST).recorded
    monkeypatch.chdir(tmp_path)
    target = {"store": str(store), "relative": "./runs.db", "symlink": "link.db", "wal": f"{store}-wal"}[onto]
    if onto == "symlink":
        os.symlink(store, tmp_path / "link.db")
    before = store.read_bytes()
    code, out = _cli(tmp_path, str(store), "export", target)
    assert code == 1, out
    error = json.loads(out)
    assert error["kind"] == "output-file" and str(store) in error["error"], error  # the file it would replace
    assert store.read_bytes() == before
    with make_store(str(store)).open() as opened:
        assert len(opened.list_runs()) == 1
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no temporary file left


def test_an_export_beside_the_store_still_works(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    assert record_report("torch-ops", reports.torch_ops(3), settings=Settings(cache_dir=tmp_path),
                         db_url=str(store), command=["zluda-run", "probe"], host=reports.HOST).recorded
    result = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path / "c"), "--results-db", str(store),
                                             "results", "export", str(tmp_path / "runs.db.jsonl")])
    assert result.exit_code == 0 and "exported 1 run(s)" in result.output, result.output


@pytest.mark.parametrize("onto", ["store", "wal"])
def test_a_matrix_page_onto_the_store_is_refused_before_anything_is_read(tmp_path: Path, onto: str) -> None:
    """`results matrix --html runs.db` replaced the store with the page, as the export did."""
    store = tmp_path / "runs.db"
    assert record_report("torch-ops", reports.torch_ops(3), settings=Settings(cache_dir=tmp_path),
                         db_url=str(store), command=["zluda-run", "probe"], host=reports.HOST).recorded
    before = store.read_bytes()
    target = str(store) if onto == "store" else f"{store}-wal"
    code, out = _cli(tmp_path, str(store), "matrix", "--html", target)
    assert code == 1, out
    error = json.loads(out)
    assert error["kind"] == "output-file" and str(store) in error["error"], error  # the file it would replace
    assert error["hint"] == "give --html another file name"
    assert store.read_bytes() == before
    code, out = _cli(tmp_path, str(store), "matrix", "--html", str(tmp_path / "matrix.html"))
    assert code == 0 and (tmp_path / "matrix.html").read_text().startswith("<!DOCTYPE html>"), out


def test_export_import_and_delete_answer_in_json_when_asked(tmp_path: Path) -> None:
    """--json is the machine's way to read every command: the three that change the store said plain text."""
    store, bundle = tmp_path / "runs.db", tmp_path / "runs.jsonl"
    outcome = record_report("torch-ops", reports.torch_ops(3), settings=Settings(cache_dir=tmp_path),
                            db_url=str(store), command=["zluda-run", "probe"], host=reports.HOST)
    assert outcome.recorded and outcome.run_id
    code, out = _cli(tmp_path, str(store), "export", str(bundle))
    assert code == 0 and json.loads(out) == {"schema": 1, "exported": 1, "file": str(bundle)}, out
    other = tmp_path / "other.db"
    code, out = _cli(tmp_path, str(other), "import", str(bundle))
    assert code == 0 and json.loads(out) == {"schema": 1, "imported": 1, "already_stored": 0,
                                             "files": [str(bundle)]}, out
    code, out = _cli(tmp_path, str(other), "delete", outcome.run_id[:8])
    assert code == 0, out
    assert json.loads(out) == {"schema": 1, "deleted": outcome.run_id, "store": str(other)}, out
