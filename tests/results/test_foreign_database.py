"""A SQLite database of another program given as the store is refused and left as it was (hunt of
2026-12-01).

On e29888c ``zluda-run results --results-db other-app.sqlite list`` (a typo, a wrong variable) switched
that database to WAL and added zluda-runner's tables to it, and said "no runs recorded"; a recording
did the same silently. These tests fail there.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import make_store
from zluda_runner.results.recording import record_report


def _foreign(path: Path) -> str:
    """Another program's database (rollback journal, two tables, a row); returns its bytes' hash."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
        conn.execute("CREATE TABLE runs (id INTEGER, note TEXT)")  # a name ours has too
        conn.execute("INSERT INTO moz_places (url) VALUES ('https://example.org/')")
    conn.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_foreign_sqlite_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    other = tmp_path / "places.sqlite"
    digest = _foreign(other)
    for args in (("list",), ("matrix",), ("show", "abcd")):
        result = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(tmp_path / "c"),
                                                 "--results-db", str(other), "results", *args])
        assert result.exit_code == 1, (args, result.output)
        error = json.loads(result.output)
        assert (error["kind"], error["exit_code"]) == ("foreign-database", 1), error
        assert "moz_places, runs" in error["error"] and "mv " not in error["hint"], error
    outcome = record_report("torch-ops", reports.torch_ops(3), settings=Settings(cache_dir=tmp_path),
                            db_url=str(other), command=["zluda-run", "probe"], host=reports.HOST)
    assert (outcome.recorded, outcome.error_kind) == (False, "foreign-database"), outcome
    assert hashlib.sha256(other.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("places")) == ["places.sqlite"]


def test_an_empty_file_and_a_store_of_ours_still_open(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()  # what some tools leave before the first write: a new store is made in it
    with make_store(str(empty)).open() as store:
        assert len(store.list_runs()) == 0
    ours = tmp_path / "ours.db"
    assert record_report("torch-ops", reports.torch_ops(3), settings=Settings(cache_dir=tmp_path),
                         db_url=str(ours), command=["zluda-run", "probe"], host=reports.HOST).recorded
    with make_store(str(ours)).open() as store:
        assert len(store.list_runs()) == 1
