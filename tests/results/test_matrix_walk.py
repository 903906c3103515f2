"""The matrix's latest run of each kind in each cell is found by a walk of the index runs_by_cell that
seeks from one (cell, kind) to the next (issue 28: ranking every run made the matrix of 10x the runs
cost 10x and more). It picks what ranking picked, on both backends, with ``since`` too: the latest by
start, then by id (ties), in cells whose names sort unlike their bytes; and its work does not grow with
the runs (SQLite's virtual machine steps, counted: no timing)."""

from __future__ import annotations

import dataclasses
import itertools
import sqlite3
from pathlib import Path

from zluda_runner.results.backends import make_store
from zluda_runner.results.schema import RunRecord, content_id
from zluda_runner.results.store import LATEST_OF_EACH_KIND

RELEASES = ["upstream-v6", "Fork_A", "fork-3.9.5", "none", "ß-build"]
GFX = ["gfx1100", "gfx1030", "GFX90A"]
TORCH = ["2.4.1+cu118", "-", "2.14.1+cu130"]
KINDS = ["torch-ops", "probe", "ab", "doctor"]


def _runs(count: int, salt: str = "") -> list[RunRecord]:
    """Runs spread over the cells and kinds, many of them sharing a start time (ties go to the id)."""
    out = []
    combos = itertools.cycle(itertools.product(RELEASES, GFX, TORCH, KINDS))
    for n in range(count):
        release, gfx, torch, kind = next(combos)
        run = RunRecord(kind=kind, started_at=f"2025-0{1 + n % 3}-0{1 + n % 2}T10:00:00.000000Z",
                        host={"gfx": gfx}, release={"id": release}, target={"binary": torch},
                        command=["zluda-run", salt, str(n)],
                        summary={"passed": n % 7, "failed": n % 3, "total": n % 7 + n % 3, "items": 0})
        out.append(dataclasses.replace(run, run_id=content_id(run)))
    return out


def _expected(runs: list[RunRecord], since: str | None) -> set[tuple[str, str, str, str, str]]:
    latest: dict[tuple[str, str, str, str], RunRecord] = {}
    for run in runs:
        if since is not None and run.started_at < since:
            continue
        key = (run.release_id, run.gfx, run.torch_build, run.kind)
        if key not in latest or (latest[key].started_at, latest[key].run_id) < (run.started_at, run.run_id):
            latest[key] = run
    return {(*key, run.run_id) for key, run in latest.items()}


def test_the_walk_picks_the_latest_of_each_kind_in_each_cell(store_url: str) -> None:
    runs = _runs(400)
    with make_store(store_url).open() as store:
        store.insert_runs(runs)
        for since in (None, "2025-02-02", "2025-03-01T10:00", "2026-01-01"):
            counts, latest = store.cells(since)
            got = {(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in latest}
            assert got == _expected(runs, since), since
            assert len({tuple(r[:3]) for r in counts}) == len({g[:3] for g in got})


def _steps(url: str, sql: str) -> tuple[int, int]:
    """(SQLite virtual machine instructions run, rows) of a query."""
    conn = sqlite3.connect(url)
    ticks = itertools.count()
    conn.set_progress_handler(lambda: next(ticks) and 0, 1)  # called at every instruction; 0: go on
    rows = conn.execute(sql).fetchall()
    conn.close()
    return next(ticks), len(rows)


def test_the_walk_does_the_same_work_for_ten_times_the_runs(tmp_path: Path) -> None:
    steps = []
    for count in (300, 3000):
        url = str(tmp_path / f"s{count}" / "results.db")
        with make_store(url).open() as store:
            store.insert_runs(_runs(count, salt=str(count)))
        ran, rows = _steps(url, LATEST_OF_EACH_KIND)
        steps.append(ran)
        assert rows == len(RELEASES) * len(GFX) * len(TORCH) * len(KINDS)  # every (cell, kind) has runs
    assert steps[1] < 1.5 * steps[0], steps  # a seek per (cell, kind): log n, not n
