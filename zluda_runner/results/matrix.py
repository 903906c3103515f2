"""The compatibility matrix: releases x GPU targets x torch builds.

Each cell takes the latest run of each kind recorded for that (release, gfx, torch
build): the probe's pass rate, the torch-op pass rate, the A/B verdict, and the
failing items of those runs (the drill-down).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zluda_runner.core.serial import JsonMixin
from zluda_runner.results.schema import RunRecord
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

    @property
    def releases(self) -> list[str]:
        return sorted({c.release for c in self.cells})

    @property
    def gfx_targets(self) -> list[str]:
        return sorted({c.gfx for c in self.cells})

    @property
    def torch_builds(self) -> list[str]:
        return sorted({c.torch for c in self.cells})


def _rate(run: RunRecord) -> Rate:
    return Rate(
        run.count("passed"), run.count("total"), run.run_id, run.started_at
    )


def _verdict(run: RunRecord) -> str:
    verdict = run.summary.get("verdict")
    return verdict if isinstance(verdict, str) and verdict else "?"


def build_matrix(store: ResultsStore, *, since: str | None = None) -> Matrix:
    runs = store.list_runs(since=since)  # oldest first: later runs replace earlier ones
    cells: dict[tuple[str, str, str], Cell] = {}
    latest: dict[tuple[str, str, str], dict[str, RunRecord]] = {}
    for run in runs:
        key = (run.release_id, run.gfx, run.torch_build)
        cell = cells.setdefault(key, Cell(*key))
        cell.runs += 1
        cell.last = max(cell.last, run.started_at)
        latest.setdefault(key, {})[run.kind] = run
    wanted: list[str] = []
    for key, by_kind in latest.items():
        cell = cells[key]
        if "probe" in by_kind:
            cell.probe = _rate(by_kind["probe"])
        if "torch-ops" in by_kind:
            cell.torch_ops = _rate(by_kind["torch-ops"])
        if "ab" in by_kind:
            cell.ab = _verdict(by_kind["ab"])
            cell.ab_run = by_kind["ab"].run_id
        wanted += [
            r.run_id for k, r in by_kind.items() if k in DRILL_KINDS and r.count("failed")
        ]
    failing = store.failing_items(wanted, per_run=FAILING_PER_RUN)
    for key, by_kind in latest.items():
        for kind in DRILL_KINDS:
            latest_run = by_kind.get(kind)
            if latest_run is not None:
                cells[key].failing += [
                    Failing(kind, i.item, i.status, i.detail) for i in failing.get(latest_run.run_id, [])
                ]
    return Matrix(sorted(cells.values(), key=lambda c: (c.release, c.gfx, c.torch)), len(runs))
