"""The compatibility matrix: releases x GPU targets x torch builds.

Each cell takes the latest run of each kind recorded for that (release, gfx, torch
build): the probe's pass rate, the torch-op pass rate, the A/B verdict, and the
failing items of those runs (the drill-down). Beside the cells, per GPU target and torch
build, the known-good locks recorded finds kept (:mod:`zluda_runner.results.locks`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zluda_runner.core.serial import JsonMixin
from zluda_runner.results.locks import KnownLock, known_locks
from zluda_runner.results.recordable import text_of
from zluda_runner.results.schema import summary_count
from zluda_runner.results.store import ResultsStore

DRILL_KINDS = ("probe", "torch-ops", "ab", "verify-load", "trace")
FAILING_PER_RUN = 50


@dataclass(frozen=True)
class Rate(JsonMixin):
    passed: int
    total: int
    run_id: str
    when: str

    @property
    def percent(self) -> float | None:
        return 100.0 * self.passed / self.total if self.total else None

    def text(self) -> str:
        pct = self.percent
        return f"{pct:.0f}% ({self.passed}/{self.total})" if pct is not None else "-"


@dataclass(frozen=True)
class Failing(JsonMixin):
    kind: str
    item: str
    status: str
    detail: str = ""


@dataclass
class Cell(JsonMixin):
    release: str
    gfx: str
    torch: str
    runs: int = 0
    last: str = ""
    probe: Rate | None = None
    torch_ops: Rate | None = None
    ab: str | None = None
    ab_run: str | None = None
    failing: list[Failing] = field(default_factory=list)


@dataclass(frozen=True)
class Matrix(JsonMixin):
    cells: list[Cell] = field(default_factory=list)
    runs: int = 0
    locks: list[KnownLock] = field(default_factory=list)  # the known-good locks, per GPU x torch

    @property
    def releases(self) -> list[str]:
        return sorted({c.release for c in self.cells})

    @property
    def gfx_targets(self) -> list[str]:
        return sorted({c.gfx for c in self.cells})

    @property
    def torch_builds(self) -> list[str]:
        return sorted({c.torch for c in self.cells})


def _count(value: object) -> int:
    return summary_count({"n": value}, "n")


def build_matrix(store: ResultsStore, *, since: str | None = None) -> Matrix:
    """The matrix, counted and the latest runs picked in the database (:meth:`ResultsStore.cells`)."""
    counts, latest = store.cells(since)
    cells = {(text_of(r[0]), text_of(r[1]), text_of(r[2])): Cell(text_of(r[0]), text_of(r[1]), text_of(r[2]),
                                                                 _count(r[3]), text_of(r[4])) for r in counts}
    wanted: dict[str, tuple[Cell, str]] = {}
    for key0, key1, key2, kind, run_id, started, passed, failed, verdict, total in latest:
        cell = cells[(text_of(key0), text_of(key1), text_of(key2))]
        run_id, kind = text_of(run_id), text_of(kind)
        if kind in ("probe", "torch-ops"):
            rate = Rate(_count(passed), total, run_id, text_of(started))
            cell.probe, cell.torch_ops = (rate, cell.torch_ops) if kind == "probe" else (cell.probe, rate)
        if kind == "ab":
            cell.ab, cell.ab_run = (verdict if isinstance(verdict, str) and verdict else "?"), run_id
        if kind in DRILL_KINDS and _count(failed):
            wanted[run_id] = (cell, kind)
    failing = store.failing_items(list(wanted), per_run=FAILING_PER_RUN)
    for run_id, (cell, kind) in sorted(wanted.items(), key=lambda w: DRILL_KINDS.index(w[1][1])):
        cell.failing += [Failing(kind, i.item, i.status, i.detail) for i in failing.get(run_id, [])]
    finds = store.run_ids("find", since)
    return Matrix(sorted(cells.values(), key=lambda c: (c.release, c.gfx, c.torch)),
                  sum(c.runs for c in cells.values()), known_locks(store.get_runs(finds)) if finds else [])
