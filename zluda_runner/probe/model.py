"""Probe reports: per case (or per torch op) a status, what was called, and why it failed."""

from __future__ import annotations

from dataclasses import dataclass, field

from zluda_runner.core.serial import JsonMixin
from zluda_runner.probe.bindings import CallRecord
from zluda_runner.results.recordable import ResultRow, ResultRows, number

PROBE_SCHEMA = 1
PASS, FAIL, MISSING, CRASHED, TIMEOUT, SKIPPED = "pass", "fail", "missing", "crashed", "timeout", "skipped"
MISMATCH, ERROR, UNAVAILABLE = "mismatch", "error", "unavailable"  # torch-level probe
UNSUPPORTED = "unsupported"  # torch op: the dtype is not among those the op declares for the device
STATUSES = (PASS, FAIL, MISSING, CRASHED, TIMEOUT, SKIPPED, MISMATCH, ERROR, UNAVAILABLE, UNSUPPORTED)
PROBLEMS = (FAIL, MISSING, CRASHED, TIMEOUT, MISMATCH, ERROR)  # any of these: exit code 3
KIND_DRIVER, KIND_TORCH = "driver", "torch"


@dataclass
class CaseResult(JsonMixin):
    id: str
    area: str
    title: str
    status: str
    detail: str = ""
    result_code: int | None = None
    result_name: str | None = None
    signal: str | None = None
    calls: list[CallRecord] = field(default_factory=list)
    duration_s: float = 0.0
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    dtype: str = ""


@dataclass(frozen=True)
class LoadResult(JsonMixin):
    status: str  # pass | fail | crashed | timeout
    detail: str = ""


@dataclass(frozen=True)
class SymbolCoverage(JsonMixin):
    reference: int = 0
    exported: int = 0
    present: int = 0
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def percent(self) -> float:
        return 100.0 * self.present / self.reference if self.reference else 0.0


@dataclass
class ProbeReport(JsonMixin):
    schema: int = PROBE_SCHEMA
    kind: str = KIND_DRIVER
    target: str = ""
    load: LoadResult | None = None
    cases: list[CaseResult] = field(default_factory=list)
    coverage: SymbolCoverage | None = None
    summary: dict[str, int] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    def summarise(self) -> None:
        counts: dict[str, int] = {}
        for case in self.cases:
            counts[case.status] = counts.get(case.status, 0) + 1
        self.summary = {s: counts[s] for s in STATUSES if s in counts}

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

    def by_status(self, status: str) -> list[str]:
        return [c.id for c in self.cases if c.status == status]

    def case(self, case_id: str) -> CaseResult | None:
        return next((c for c in self.cases if c.id == case_id), None)

    def result_rows(self) -> ResultRows:
        """Recorded (kind probe, or torch-ops): one row per case or op, ok = pass; skipped and
        unavailable are neither (:class:`~zluda_runner.results.recordable.Recordable`)."""
        return ResultRows(rows=tuple(_case_row(c) for c in self.cases),
                          summary={"load": self.load.status} if self.load is not None else {})


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
    if not isinstance(status, str) or status not in STATUSES:
        detail = f"unreadable result (status {str(status)[:40]!r}) {detail}".strip()
        status = ERROR
    dtype = event.get("dtype", "")
    return CaseResult(
        id=str(event.get("id")),
        area=area,
        title=title,
        status=status,
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
