"""``find``'s records: a candidate (a release and a setting variant), its verdict, the report (the lock's
own records are the conductor's, which carries a lock out: :mod:`zluda_runner.release.lockfile`).

A candidate is judged as ``poc`` judges (:mod:`zluda_runner.poc.criteria`); its status is ``pass`` (every
criterion passed, "on the GPU" included), ``unproven`` (every criterion that can be judged here passed,
but the host shows no GPU telemetry: "on the GPU" is *not shown*, never passed) or ``fail`` (with why,
in one line: the FATAL binding, the signal or exit code and first error line, the comparator's detail).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zluda_runner.core import exitcodes
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.version import JSON_SCHEMA_VERSION
from zluda_runner.poc.model import Criterion
from zluda_runner.release.lockfile import DEFAULTS, SHARED_ITEM, Lock, Source, Stage, shared_lock
from zluda_runner.results.recordable import ResultRow, ResultRows

CandidateStatus = Literal["pass", "unproven", "fail"]
NOT_PROVEN_GPU = "not proven on the GPU"


@dataclass(frozen=True)
class Candidate(JsonMixin):
    """One combination to try: a release (a manifest id, a folder, an archive) and a setting variant."""

    source: Source
    ref: str  # the release id, the folder's or the archive's path
    variant: str = DEFAULTS
    hip: str | None = None  # the other-hip variant's ROCm folder / HIP SDK

    @property
    def label(self) -> str:
        what = self.ref if self.source == "manifest" else f"{self.source} {self.ref}"
        if self.variant == DEFAULTS:
            return what
        return f"{what} [{self.variant}{f' {self.hip}' if self.hip else ''}]"


@dataclass(frozen=True)
class CandidateVerdict(JsonMixin):
    """What one candidate came to: ``stage`` "plan" (refused before anything ran) or "run" (judged)."""

    candidate: Candidate
    stage: Stage
    status: CandidateStatus
    why: str  # one line: what passed, or the first thing that failed and its detail
    criteria: tuple[Criterion, ...] = ()
    release: str | None = None  # the release id, or the folder, the plan took
    wall_s: float = 0.0

    @property
    def score(self) -> int:
        """How many criteria passed (the best candidate when none passes everything)."""
        return sum(c.passed for c in self.criteria)


@dataclass(frozen=True)
class FindReport(JsonMixin):
    """A search: every candidate judged, in the order tried; the lock written (None: nothing ran)."""

    command: tuple[str, ...]
    reference: str
    runs: int
    verdicts: tuple[CandidateVerdict, ...]
    telemetry: str
    lock: Lock | None = None
    lock_path: str | None = None
    left: int = 0  # candidates not tried (the budget ran out, Ctrl-C, or one passed first)
    stopped: Literal["passed", "exhausted", "budget", "interrupted"] = "exhausted"
    schema: int = JSON_SCHEMA_VERSION

    @property
    def chosen(self) -> CandidateVerdict | None:
        return best(self.verdicts)

    @property
    def exit_code(self) -> int:
        if self.stopped == "interrupted":
            return exitcodes.INTERRUPTED
        chosen = self.chosen
        return exitcodes.OK if chosen is not None and chosen.status == "pass" else exitcodes.CHECK_FAILED

    @property
    def summary(self) -> str:
        chosen = self.chosen
        if chosen is None:
            return f"nothing works: {len(self.verdicts)} candidate(s) failed"
        if chosen.status == "pass":
            return f"{chosen.candidate.label} works: every criterion passes"
        return f"{chosen.candidate.label} works by every criterion judged here: {NOT_PROVEN_GPU}"

    def result_rows(self) -> ResultRows:
        """Recorded (kind find): one row per candidate (ok = it passed every criterion judged here), then
        the lock's shared form (item ``lock``; ok = proven on the GPU)."""
        rows = tuple(ResultRow(f"candidate:{v.candidate.label}", v.status, v.status != "fail",
                               f"{v.stage}: {v.why}") for v in self.verdicts)
        shared = shared_lock(self.lock) if self.lock is not None else None
        if self.lock is not None and shared is not None:  # shared: results export/import, find --from
            rows += (ResultRow(SHARED_ITEM, "proven" if self.lock.proven_on_gpu else NOT_PROVEN_GPU,
                               self.lock.proven_on_gpu, shared),)
        chosen = self.chosen
        return ResultRows(rows, {"verdict": "pass" if self.exit_code == exitcodes.OK else "fail",
                                 "verdict_text": self.summary, "stopped": self.stopped,
                                 "locked": chosen.candidate.label if chosen and self.lock else None,
                                 "proven_on_gpu": bool(self.lock and self.lock.proven_on_gpu)})


def best(verdicts: tuple[CandidateVerdict, ...]) -> CandidateVerdict | None:
    """The one to lock: the first that passed, else the first unproven one; None when every one failed
    (a failed candidate is never locked)."""
    for status in ("pass", "unproven"):
        found = next((v for v in verdicts if v.status == status), None)
        if found is not None:
            return found
    return None
