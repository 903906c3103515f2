"""The proof-of-concept verdict's records: each run, each criterion with its evidence, the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from zluda_runner.abtest.model import OutputComparison
from zluda_runner.core import exitcodes
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.version import JSON_SCHEMA_VERSION
from zluda_runner.results.recordable import ResultRow, ResultRows, number
from zluda_runner.telemetry.model import GpuSummary, GpuTrace

CriterionName = Literal["ran", "right", "on the GPU", "stable", "speed"]
CRITERIA: tuple[CriterionName, ...] = ("ran", "right", "on the GPU", "stable", "speed")
Status = Literal["pass", "fail"]
Side = Literal["zluda", "native", "reference"]


@dataclass(frozen=True)
class Timing(JsonMixin):
    """One ``ab.timer`` region of one run: every time the block ran, in seconds."""

    name: str
    seconds: tuple[float, ...]


@dataclass(frozen=True)
class PocRun(JsonMixin):
    """One run of the workload (``side`` "zluda"/"native": under test; "reference": what it is checked
    against). ``trace``: the GPU while it ran (None: no telemetry, see the report's ``telemetry``)."""

    side: Side
    index: int  # 1-based; run 1 of the workload compiles its kernels and is reported apart
    argv: tuple[str, ...]
    exit_code: int | None  # None: it never started or was stopped
    wall_s: float
    error: str | None = None
    stderr_tail: str = ""
    stdout_tail: str = ""  # what it printed last (the generated text, tokens/s)
    outputs: tuple[str, ...] = ()  # names it recorded with ab.record
    tokens: int | None = None  # elements of its "tokens" output, when it recorded one
    timings: tuple[Timing, ...] = ()
    comparisons: tuple[OutputComparison, ...] = ()  # against the reference (empty for the reference)
    trace: GpuTrace | None = None
    gpu: GpuSummary | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.error is None


@dataclass(frozen=True)
class Criterion(JsonMixin):
    """One part of the verdict: pass or fail, and the evidence it rests on, in words."""

    name: CriterionName
    status: Status
    summary: str  # one line
    evidence: tuple[str, ...] = ()
    cause: str = ""  # why it failed or went unchecked, stable: "idle", "unread", "no-telemetry", ...
    runs: tuple[int, ...] = ()  # the runs the cause is about

    @property
    def passed(self) -> bool:
        return self.status == "pass"


@dataclass(frozen=True)
class Thresholds(JsonMixin):
    """What the verdict asks for; each can be set from the command line."""

    vram_tolerance: int = 256 * 1024 * 1024  # bytes a run may leave held above the baseline
    vram_tolerance_fraction: float = 0.02  # ... or this part of the card's VRAM, whichever is more
    min_speedup: float | None = None  # reference time / our time; None: 1.0 against the CPU, 0.5 native
    rtol: float | None = None  # None: by dtype (abtest.compare.TOLERANCES)
    atol: float | None = None  # None: by dtype, and at least 1% of the reference's magnitude (float16)


@dataclass(frozen=True)
class PocReport(JsonMixin):
    command: tuple[str, ...]  # the workload as the user gave it
    mode: Literal["zluda", "native"]
    reference: str  # "cpu" or the reference command line
    runs: tuple[PocRun, ...]
    reference_runs: tuple[PocRun, ...]
    criteria: tuple[Criterion, ...]
    verdict: Status
    summary: str
    telemetry: str  # the telemetry back end and GPU, or why there is none
    thresholds: Thresholds = field(default_factory=Thresholds)
    release: str | None = None  # the ZLUDA release the runs used
    schema: int = JSON_SCHEMA_VERSION

    @property
    def ok(self) -> bool:
        return self.verdict == "pass"

    @property
    def exit_code(self) -> int:
        return exitcodes.OK if self.ok else exitcodes.CHECK_FAILED

    def criterion(self, name: CriterionName) -> Criterion:
        return next(c for c in self.criteria if c.name == name)

    def result_rows(self) -> ResultRows:
        """Recorded (kind poc): one row per criterion (ok = pass, its summary as detail; "on the GPU"
        with the runs' busy peak), and the verdict (:class:`~zluda_runner.results.recordable.Recordable`)."""
        busy = [r.gpu.busy_peak for r in self.runs if r.gpu is not None and r.gpu.busy_peak is not None]
        rows = tuple(
            ResultRow(f"criterion:{c.name}", c.status, c.passed, c.summary,
                      {"busy_peak": number(max(busy)) if busy else None} if c.name == "on the GPU" else {})
            for c in self.criteria
        )
        return ResultRows(rows, {"verdict": self.verdict, "verdict_text": self.summary, "mode": self.mode,
                                 "runs": len(self.runs)})
