"""Questions asked of the store: what changed between two runs, what is known for a GPU target."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import open_store
from zluda_runner.results.schema import ResultRow, RunRecord
from zluda_runner.results.store import ResultsStore

R = TypeVar("R")

SPEED_THRESHOLD = 0.10  # a timing median that moved by more than 10 % is a speed change
PASS_KINDS = ("probe", "torch-ops")


@dataclass(frozen=True)
class ItemChange(JsonMixin):
    item: str
    before: str | None
    after: str | None
    detail: str = ""


@dataclass(frozen=True)
class SpeedChange(JsonMixin):
    item: str
    side: str  # "A" (ZLUDA) or "B" (native)
    before_s: float
    after_s: float
    change: float  # after / before - 1


@dataclass
class RunDiff(JsonMixin):
    a: str
    b: str
    kind_a: str
    kind_b: str
    newly_failing: list[ItemChange] = field(default_factory=list)
    fixed: list[ItemChange] = field(default_factory=list)
    changed: list[ItemChange] = field(default_factory=list)
    added: list[ItemChange] = field(default_factory=list)
    removed: list[ItemChange] = field(default_factory=list)
    speed: list[SpeedChange] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return bool(self.newly_failing) or any(s.side == "A" and s.change > 0 for s in self.speed)


def _change(before: float | None, after: float | None) -> float | None:
    """``after / before - 1`` for two positive finite timings; None when that is not a finite number
    (a timing of 5e-324 s against 1 s overflows: JSON has no Infinity)."""
    if not isinstance(before, int | float) or not isinstance(after, int | float):
        return None
    if not (math.isfinite(before) and math.isfinite(after)) or before <= 0 or after <= 0:
        return None
    try:
        change = after / before - 1
    except (OverflowError, ZeroDivisionError):
        return None
    return change if math.isfinite(change) else None


def diff_runs(a: RunRecord, b: RunRecord, threshold: float = SPEED_THRESHOLD) -> RunDiff:
    """What changed from run ``a`` to run ``b``, item by item."""
    before: dict[str, ResultRow] = {i.item: i for i in a.items}
    after: dict[str, ResultRow] = {i.item: i for i in b.items}
    out = RunDiff(a.run_id, b.run_id, a.kind, b.kind)
    for name, new in after.items():
        old = before.get(name)
        if old is None:
            out.added.append(ItemChange(name, None, new.status, new.detail))
            if new.ok is False:
                out.newly_failing.append(ItemChange(name, None, new.status, new.detail))
            continue
        change = ItemChange(name, old.status, new.status, new.detail)
        if old.ok is not False and new.ok is False:
            out.newly_failing.append(change)
        elif old.ok is False and new.ok is True:
            out.fixed.append(change)
        elif old.status != new.status:
            out.changed.append(change)
        for key, side in (("median_a_s", "A"), ("median_b_s", "B")):
            x, y = old.numbers.get(key), new.numbers.get(key)
            moved = _change(x, y)
            if moved is not None and abs(moved) > threshold:
                out.speed.append(SpeedChange(name, side, float(x or 0), float(y or 0), moved))
    out.removed = [ItemChange(n, i.status, None, "") for n, i in before.items() if n not in after]
    return out


@dataclass
class GpuSummary(JsonMixin):
    release: str
    gfx: str
    runs: int
    passed: int
    total: int
    last_run: str

    @property
    def percent(self) -> float | None:
        return 100.0 * self.passed / self.total if self.total else None

    def text(self) -> str:
        pct = self.percent
        rate = f"{pct:.0f}% of ops passing" if pct is not None else "no ops counted"
        return f"{self.release} on {self.gfx}: {self.runs} run{'s' * (self.runs != 1)}, {rate}"


@dataclass(frozen=True)
class FailedRelease(JsonMixin):
    release: str
    gfx: str
    kind: str
    run_id: str
    when: str
    failed: int
    examples: list[str] = field(default_factory=list)

    def text(self) -> str:
        more = f" ({', '.join(self.examples)})" if self.examples else ""
        return (
            f"{self.release} failed {self.failed} {self.kind} item(s) on {self.gfx} on {self.when[:10]}{more}"
        )


def _with_store(settings: Settings | None, db_url: str | None, store: ResultsStore | None,
                fn: Callable[[ResultsStore], list[R]]) -> list[R]:
    if store is not None:
        return fn(store)
    opened = open_store(settings, db_url, create=False)
    if opened is None:
        return []
    with opened:
        return fn(opened)


def summary_for_gpu(
    gfx: str,
    *,
    settings: Settings | None = None,
    db_url: str | None = None,
    store: ResultsStore | None = None,
) -> list[GpuSummary]:
    """Per release, what probe and torch-op runs on ``gfx`` found (best first).

    No store yet: an empty list. A broken store raises ResultsStoreError.
    """

    def query(st: ResultsStore) -> list[GpuSummary]:
        rows: dict[str, GpuSummary] = {}
        for run in st.list_runs(gfx=gfx):
            if run.kind not in PASS_KINDS:
                continue
            s = rows.setdefault(run.release_id, GpuSummary(run.release_id, gfx, 0, 0, 0, run.started_at))
            s.runs += 1
            s.passed += run.count("passed")
            s.total += run.count("total")
            s.last_run = max(s.last_run, run.started_at)
        return sorted(rows.values(), key=lambda s: (-(s.percent or 0.0), s.release))

    return list(_with_store(settings, db_url, store, query))


def failed_releases_for_gpu(
    gfx: str,
    *,
    settings: Settings | None = None,
    db_url: str | None = None,
    store: ResultsStore | None = None,
) -> list[FailedRelease]:
    """Releases whose latest run of some kind on ``gfx`` had failing items (doctor mentions them)."""

    def query(st: ResultsStore) -> list[FailedRelease]:
        latest: dict[tuple[str, str], RunRecord] = {}
        for run in st.list_runs(gfx=gfx):  # oldest first: later runs replace earlier ones
            if run.kind != "doctor" and run.release_id != "none":
                latest[(run.release_id, run.kind)] = run
        bad = [r for r in latest.values() if r.count("failed") > 0]
        examples = st.failing_items([r.run_id for r in bad], per_run=3)
        return [
            FailedRelease(
                r.release_id,
                gfx,
                r.kind,
                r.run_id,
                r.started_at,
                r.count("failed"),
                [i.item for i in examples.get(r.run_id, [])],
            )
            for r in sorted(bad, key=lambda r: (r.release_id, r.kind))
        ]

    return list(_with_store(settings, db_url, store, query))
