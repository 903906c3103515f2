"""Probe reports: per case (or per torch op) a status, what was called, and why it failed.

The records are frozen: a probe gathers its cases, load result and warnings as local values and
builds its :class:`ProbeReport` once; the summary (counts per status) is computed from the cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeGuard

from zluda_runner.core.serial import JsonMixin
from zluda_runner.probe.bindings import CallRecord
from zluda_runner.results.recordable import ResultRow, ResultRows, number

PROBE_SCHEMA = 1
CaseStatus = Literal["pass", "fail", "missing", "crashed", "timeout", "skipped", "mismatch", "error",
                     "unavailable", "unsupported"]
LoadStatus = Literal["pass", "fail", "crashed", "timeout", "unavailable"]
ProbeKind = Literal["driver", "torch"]
PASS: Final = "pass"  # noqa: S105 (a status word)
FAIL: Final = "fail"
MISSING: Final = "missing"
CRASHED: Final = "crashed"
TIMEOUT: Final = "timeout"
SKIPPED: Final = "skipped"
MISMATCH: Final = "mismatch"  # torch-level probe
ERROR: Final = "error"
UNAVAILABLE: Final = "unavailable"
UNSUPPORTED: Final = "unsupported"  # torch op: the dtype is not among those the op declares for the device
STATUSES: tuple[CaseStatus, ...] = (PASS, FAIL, MISSING, CRASHED, TIMEOUT, SKIPPED, MISMATCH, ERROR,
                                    UNAVAILABLE, UNSUPPORTED)
# any of these: exit code 3
PROBLEMS: tuple[CaseStatus, ...] = (FAIL, MISSING, CRASHED, TIMEOUT, MISMATCH, ERROR)
KIND_DRIVER: Final = "driver"
KIND_TORCH: Final = "torch"


def is_status(value: object) -> TypeGuard[CaseStatus]:
    """``value`` is a case status word (what a worker or a target interpreter sent may be anything)."""
    return isinstance(value, str) and value in STATUSES


def tally(cases: Sequence[CaseResult]) -> dict[str, int]:
    """Cases per status, in the order of :data:`STATUSES`, statuses without a case left out."""
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.status] = counts.get(case.status, 0) + 1
    return {s: counts[s] for s in STATUSES if s in counts}


@dataclass(frozen=True)
class CaseResult(JsonMixin):
    id: str
    area: str
    title: str
    status: CaseStatus
    detail: str = ""
    result_code: int | None = None
    result_name: str | None = None
    signal: str | None = None
    calls: tuple[CallRecord, ...] = ()
    duration_s: float = 0.0
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    dtype: str = ""


@dataclass(frozen=True)
class LoadResult(JsonMixin):
    status: LoadStatus
    detail: str = ""


@dataclass(frozen=True)
class SymbolCoverage(JsonMixin):
    reference: int = 0
    exported: int = 0
    present: int = 0
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    error: str | None = None

    @property
    def percent(self) -> float:
        return 100.0 * self.present / self.reference if self.reference else 0.0


@dataclass(frozen=True)
class ProbeReport(JsonMixin):
    schema: int = PROBE_SCHEMA
    kind: ProbeKind = KIND_DRIVER
    target: str = ""
    load: LoadResult | None = None
    cases: tuple[CaseResult, ...] = ()
    coverage: SymbolCoverage | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    duration_s: float = 0.0

    @property
    def summary(self) -> dict[str, int]:
        """Cases per status (:func:`tally`); in the JSON after ``coverage``."""
        return tally(self.cases)

    def to_dict(self) -> dict[str, Any]:
        plain = super().to_dict()
        at = list(plain).index("coverage") + 1
        items = list(plain.items())
        return dict([*items[:at], ("summary", self.summary), *items[at:]])

    @property
    def has_problems(self) -> bool:
        """A case failed, crashed, hung, was missing, or a torch op mismatched / errored."""
        return any(c.status in PROBLEMS for c in self.cases) or (
            self.load is not None and self.load.status not in (PASS,)
        )

    @property
    def could_not_run(self) -> bool:
        """The target said before any case that it cannot run them (no device, no OpInfo database)."""
        return self.load is not None and self.load.status == UNAVAILABLE and not self.cases

    def by_status(self, status: CaseStatus) -> list[str]:
        return [c.id for c in self.cases if c.status == status]

    def case(self, case_id: str) -> CaseResult | None:
        return next((c for c in self.cases if c.id == case_id), None)

    def result_rows(self) -> ResultRows:
        """Recorded (kind probe, or torch-ops): one row per case or op, ok = pass; skipped and
        unavailable are neither (:class:`~zluda_runner.results.recordable.Recordable`). A probe that could
        not run is recorded as not run (its one row says why), never as a run of no items."""
        if self.could_not_run and self.load is not None:
            return ResultRows(rows=(ResultRow("load", NOT_RUN, None, self.load.detail),),
                              summary={"load": self.load.status, "verdict": NOT_RUN})
        return ResultRows(rows=tuple(_case_row(c) for c in self.cases),
                          summary={"load": self.load.status} if self.load is not None else {})


NOT_RUN = "not run"  # what a probe that could not run is recorded as


def _case_row(case: CaseResult) -> ResultRow:
    numbers = {"duration_s": number(case.duration_s)}
    for key, value in (("max_abs_err", case.max_abs_err), ("max_rel_err", case.max_rel_err)):
        if value is not None:
            numbers[key] = number(value)
    detail = " ".join(x for x in (case.result_name, case.detail) if x)
    ok = None if case.status in (SKIPPED, UNAVAILABLE) else case.status == PASS
    return ResultRow(case.id, case.status, ok, detail, numbers)


def op_case(event: dict[str, object], title: str, area: str) -> CaseResult:
    """A torch op's result from the target interpreter's event, every field checked: what the
    interpreter (or something in it writing on its stdout) sent may be anything."""
    status = event.get("status")

    def number(key: str) -> float | None:
        value = event.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return None

    detail = event.get("detail", "")
    detail = detail if isinstance(detail, str) else repr(detail)
    known: CaseStatus = ERROR
    if is_status(status):
        known = status
    else:
        detail = f"unreadable result (status {str(status)[:40]!r}) {detail}".strip()
    dtype = event.get("dtype", "")
    return CaseResult(
        id=str(event.get("id")),
        area=area,
        title=title,
        status=known,
        detail=detail[:2000],
        max_abs_err=number("max_abs_err"),
        max_rel_err=number("max_rel_err"),
        duration_s=number("duration_s") or 0.0,
        dtype=dtype if isinstance(dtype, str) else "",
    )


def str_list(value: object) -> list[str]:
    """``value`` as a list of strings (an event's list field), else empty."""
    return [str(v) for v in value] if isinstance(value, list) else []


def str_dict(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
