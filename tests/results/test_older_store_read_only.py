"""A store of an older schema that cannot be written here (found 2026-12-01): on 809d44d a reader (list,
show, matrix, export) of a schema-1 store, written by an older zluda-runner, on a read-only share failed
with "can only be read here ...: runs can be listed", and listed nothing: opening it tried to bring it up
to date, a write. A reader reads it as it is now (its tables are what is read); a writer is still told
it cannot add to it, and the store is left as it was."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.results.test_matrix_cli import _cli, plant
from tests.results.test_store_paths import _read_only
from zluda_runner.results.schema import SCHEMA_VERSION


def _as_schema_1(url: str) -> None:
    """The store as migration 1 alone made it: no index of a later one."""
    conn = sqlite3.connect(url)
    for index in ("runs_by_gfx", "runs_by_time", "runs_by_cell", "items_failing_only"):
        conn.execute(f"DROP INDEX {index}")
    conn.execute("DELETE FROM schema_version WHERE version > 1")
    conn.commit()
    conn.close()


def test_an_older_store_on_a_read_only_share_is_read(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    url = str(shared / "results.db")
    plant(url, tmp_path)
    _as_schema_1(url)
    bundle = tmp_path / "b.jsonl"
    before = Path(url).read_bytes()
    with _read_only(shared):
        code, out = _cli("--results-db", url, "list", "--json", tmp_path=tmp_path)
        assert code == 0, out
        runs = json.loads(out)["runs"]
        assert len(runs) == 7
        assert _cli("--results-db", url, "show", runs[0]["run_id"][:8], tmp_path=tmp_path)[0] == 0
        assert _cli("--results-db", url, "matrix", "--json", tmp_path=tmp_path)[0] == 0
        assert _cli("--results-db", url, "export", str(bundle), tmp_path=tmp_path)[0] == 0
        code, out = _cli("--results-db", url, "import", str(bundle), "--json", tmp_path=tmp_path)
        assert code == 1 and json.loads(out)["kind"] == "read-only-store", out
    assert Path(url).read_bytes() == before
    conn = sqlite3.connect(url)
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == 1
    conn.close()


def test_an_older_store_that_can_be_written_is_brought_up_to_date_by_a_reader(tmp_path: Path) -> None:
    url = str(tmp_path / "results.db")
    plant(url, tmp_path)
    _as_schema_1(url)
    assert _cli("--results-db", url, "list", tmp_path=tmp_path)[0] == 0
    conn = sqlite3.connect(url)
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
