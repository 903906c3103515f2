"""The A/B comparison's data: recorded outputs, each run, the comparisons, the report.

The records are frozen: :func:`~zluda_runner.abtest.run.run_ab` builds each run's
:class:`RunResult` once, and :func:`~zluda_runner.abtest.compare.summarise` the finished
:class:`AbReport` (sides counted, outputs and timings compared, the verdict) from the runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from zluda_runner.core import exitcodes
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.version import JSON_SCHEMA_VERSION
from zluda_runner.results.recordable import ResultRow, ResultRows, number

Side = Literal["A", "B"]
Faster = Literal["A", "B", "same"]  # "same": the medians are within the tie margin
ComparisonStatus = Literal["agree", "differ", "shape_mismatch", "missing_in_a", "missing_in_b"]


@dataclass(frozen=True)
class Output:
    name: str
    dtype: str
    shape: tuple[int, ...]
    values: tuple[float, ...]
    logits: bool | None = None


@dataclass(frozen=True)
class RunResult(JsonMixin):
    side: Side
    index: int
    exit_code: int | None
    wall_s: float
    outputs: tuple[str, ...] = ()
    timings: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    stderr_tail: str = ""
    error: str | None = None


@dataclass(frozen=True)
class TimingStats(JsonMixin):
    samples: int
    median_s: float
    min_s: float
    max_s: float


@dataclass(frozen=True)
class TimingComparison(JsonMixin):
    name: str
    a: TimingStats | None
    b: TimingStats | None
    ratio_a_over_b: float | None = None
    faster: Faster | None = None  # None when a side has no samples


@dataclass(frozen=True)
class OutputComparison(JsonMixin):
    name: str
    status: ComparisonStatus
    dtype_a: str | None = None
    dtype_b: str | None = None
    shape_a: tuple[int, ...] | None = None
    shape_b: tuple[int, ...] | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rtol: float | None = None
    atol: float | None = None
    mismatched: int = 0
    elements: int = 0
    argmax_agreement: float | None = None
    detail: str = ""  # what differs, the comparator's words: "inf where the reference has 1.5 at index 2"


@dataclass(frozen=True)
class SideSummary(JsonMixin):
    label: Side
    argv: tuple[str, ...]
    runs: int = 0
    failed_runs: int = 0
    recorded_nothing: int = 0
    wall: TimingStats | None = None


@dataclass(frozen=True)
class AbReport(JsonMixin):
    a: SideSummary
    b: SideSummary
    runs: tuple[RunResult, ...] = ()
    outputs: tuple[OutputComparison, ...] = ()
    timings: tuple[TimingComparison, ...] = ()
    agree: bool | None = None
    faster: Faster | None = None
    verdict: str = ""
    problems: tuple[str, ...] = ()
    schema: int = JSON_SCHEMA_VERSION

    @property
    def ok(self) -> bool:
        """Both sides ran, recorded what was compared, and agree."""
        return self.agree is True and not self.problems

    @property
    def exit_code(self) -> int:
        return exitcodes.OK if self.ok else exitcodes.CHECK_FAILED

    def result_rows(self) -> ResultRows:
        """Recorded (kind ab): ``output:<name>`` rows (ok = agree) and ``timing:<name>`` rows (the
        medians and their ratio; neither ok nor failing), and the short verdict
        (:class:`~zluda_runner.results.recordable.Recordable`)."""
        rows = [ResultRow(f"output:{o.name}", o.status, o.status == "agree", o.detail,
                          {"max_abs_error": number(o.max_abs_error), "max_rel_error": number(o.max_rel_error),
                           "argmax_agreement": number(o.argmax_agreement)}) for o in self.outputs]
        rows += [ResultRow(f"timing:{t.name}", f"faster:{t.faster}", None, "",
                           {"median_a_s": number(t.a.median_s) if t.a else None,
                            "median_b_s": number(t.b.median_s) if t.b else None,
                            "ratio_a_over_b": number(t.ratio_a_over_b)}) for t in self.timings]
        short = "agree" if self.agree is True else "differ" if self.agree is False else "no outputs"
        if self.faster:
            short += ", same speed" if self.faster == "same" else f", {self.faster} faster"
        return ResultRows(rows=tuple(rows), summary={"verdict": short, "verdict_text": self.verdict,
                                                     "agree": self.agree, "faster": self.faster})
