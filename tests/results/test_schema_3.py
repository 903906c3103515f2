"""Migration 3 (issue 28): the index the matrix query reads (``runs_by_cell``: its runs ranked per cell in
index order, no sort, so the matrix of 10x the runs takes about 10x the time), and the failing items
alone indexed (``items_failing_only``, instead of an entry per item). A store of schema 2 with runs in
it is brought up to date in place when it is opened, on both backends: its runs and its matrix are
what they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.results.test_matrix_cli import plant
from zluda_runner.results.backends import make_store
from zluda_runner.results.matrix import build_matrix
from zluda_runner.results.schema import SCHEMA_VERSION
from zluda_runner.results.store import ResultsStore

INDEXES = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%'",
    "postgresql": "SELECT indexname FROM pg_indexes WHERE tablename IN ('runs', 'items')"
                  " AND indexname NOT IN ('runs_pkey', 'items_pkey')",
}


def _indexes(store: ResultsStore) -> set[str]:
    with store._tx(write=False) as cur:
        return {str(row[0]) for row in store._exec(cur, INDEXES[store.dialect]).fetchall()}


def _as_schema_2(url: str) -> None:
    """The store as migrations 1 and 2 made it (what a zluda-runner before issue 28 left)."""
    store = make_store(url).open()
    with store._tx(write=True) as cur:
        for statement in ("DROP INDEX runs_by_cell", "DROP INDEX items_failing_only",
                          "CREATE INDEX items_failing ON items (run_id, ok)",
                          "DELETE FROM schema_version WHERE version > 2"):
            store._exec(cur, statement)
    assert store.schema_version() == 2
    store.close()


def test_a_schema_2_store_is_migrated_in_place(store_url: str, tmp_path: Path) -> None:
    plant(store_url, tmp_path)
    with make_store(store_url).open() as store:
        before = build_matrix(store).to_dict()
        runs = [r.run_id for r in store.list_runs()]
    _as_schema_2(store_url)
    with make_store(store_url).open() as store:
        assert store.schema_version() == SCHEMA_VERSION == 3
        assert _indexes(store) == {"runs_by_gfx", "runs_by_time", "runs_by_cell", "items_failing_only"}
        assert [r.run_id for r in store.list_runs()] == runs
        assert build_matrix(store).to_dict() == before
        assert any(c["failing"] for c in before["cells"])  # the drill-down read the failing items' index


def test_the_matrix_is_ranked_from_its_index_without_a_sort(tmp_path: Path) -> None:
    """SQLite's plan of each query the matrix makes: the runs read through runs_by_cell (covering: no
    row is read to count them or to find each kind's latest), no temporary B-tree (a sort, n log n); the
    failing items through theirs."""
    url = str(tmp_path / "s" / "results.db")
    plant(url, tmp_path)
    seen: list[tuple[str, tuple[Any, ...]]] = []
    with make_store(url).open() as store:
        real = store._exec

        def spy(cur: Any, sql: str, params: Any = ()) -> Any:
            seen.append((sql, tuple(params)))
            return real(cur, sql, params)

        store._exec = spy  # type: ignore[method-assign]
        build_matrix(store)
        build_matrix(store, since="2025-03-02")
        store._exec = real  # type: ignore[method-assign]
        plans = {}
        with store._tx(write=False) as cur:
            for sql, params in seen:
                if sql.startswith(("SELECT", "WITH")) and "schema_version" not in sql:
                    plans[sql] = [str(r[-1]) for r in store._exec(cur, "EXPLAIN QUERY PLAN " + sql, params)]
    walked = [p for sql, p in plans.items() if "WITH RECURSIVE" in sql]
    counted = [p for sql, p in plans.items() if "COUNT(*)" in sql]
    failing = [p for sql, p in plans.items() if "FROM items" in sql]
    assert len(walked) == len(counted) == 2 and failing, plans
    for plan in counted:
        assert "SCAN runs USING COVERING INDEX runs_by_cell" in plan, plan
    for plan in walked:  # from one (cell, kind) to the next by seeks (tests/results/test_matrix_walk.py)
        assert any(step.startswith("SEARCH n USING COVERING INDEX runs_by_cell (release_id=? AND gfx=?")
                   for step in plan), plan
    for plan in plans.values():
        assert not any("TEMP B-TREE" in step for step in plan), plan
    assert all(any("items_failing_only" in step for step in plan) for plan in failing), failing
