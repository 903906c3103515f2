"""``find``'s records: a candidate (a release and a setting variant), its verdict, the lock, the report.

A candidate is judged as ``poc`` judges (:mod:`zluda_runner.poc.criteria`); its status is ``pass`` (every
criterion passed, "on the GPU" included), ``unproven`` (every criterion that can be judged here passed,
but the host shows no GPU telemetry: "on the GPU" is *not shown*, never passed) or ``fail`` (with why,
in one line: the FATAL binding, the signal or exit code and first error line, the comparator's detail).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from zluda_runner.core import exitcodes
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.version import JSON_SCHEMA_VERSION
from zluda_runner.poc.model import Criterion
from zluda_runner.results.recordable import ResultRow, ResultRows

LOCK_SCHEMA = 1  # the lock file's own schema version (zluda.lock)
DEFAULT_LOCK = "zluda.lock"
Source = Literal["manifest", "dir", "archive"]
CandidateStatus = Literal["pass", "unproven", "fail"]
Stage = Literal["plan", "run"]
NOT_PROVEN_GPU = "not proven on the GPU"
# the setting variants find tries, each a change of the defaults as applied (plan.defaults)
DEFAULTS, CUDNN_OFF_VARIANT, CUDNN_ON_VARIANT = "defaults", "cudnn-off", "cudnn-on"
VARIANTS = (DEFAULTS, CUDNN_OFF_VARIANT, CUDNN_ON_VARIANT)


@dataclass(frozen=True)
class Candidate(JsonMixin):
    """One combination to try: a release (a manifest id, a folder, an archive) and a setting variant."""

    source: Source
    ref: str  # the release id, the folder's or the archive's path
    variant: str = DEFAULTS

    @property
    def label(self) -> str:
        what = self.ref if self.source == "manifest" else f"{self.source} {self.ref}"
        return what if self.variant == DEFAULTS else f"{what} [{self.variant}]"


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
class LockedFile(JsonMixin):
    """One file of the locked release, relative to its root: its SHA-256, or the link it is."""

    path: str
    sha256: str | None = None
    link: str | None = None  # a symbolic link: its target, as written


@dataclass(frozen=True)
class LockedRelease(JsonMixin):
    """The release of the lock: the manifest id and asset (with its SHA-256) where it came from the
    manifest, the folder it was used from, and every file's SHA-256 there."""

    source: Source
    ref: str
    id: str | None = None
    asset: str | None = None
    asset_sha256: str | None = None
    root: str | None = None
    files: tuple[LockedFile, ...] = ()


@dataclass(frozen=True)
class LockedSetting(JsonMixin):
    """A setting of the locked launch: a default applied or off (and why not), or the variant's change."""

    name: str
    setting: str
    applied: bool
    why: str = ""


@dataclass(frozen=True)
class HostFacts(JsonMixin):
    """The host a lock was proven on (None: not known there)."""

    os: str
    gpu_name: str | None = None
    gfx: str | None = None
    driver: str | None = None
    hip_version: str | None = None
    hip_from: str | None = None  # where the HIP version was read, in words
    torch: str | None = None
    torch_cuda: str | None = None

    def differences(self, other: HostFacts) -> list[str]:
        """What differs on ``other`` from these facts, each as "what: locked -> here" (GPU, HIP, torch)."""
        pairs = (("GPU", self.gfx, other.gfx), ("GPU name", self.gpu_name, other.gpu_name),
                 ("HIP", self.hip_version, other.hip_version), ("torch", self.torch, other.torch),
                 ("torch's CUDA", self.torch_cuda, other.torch_cuda), ("OS", self.os, other.os))
        return [f"{what}: {mine or 'unknown'} when locked, {theirs or 'unknown'} here"
                for what, mine, theirs in pairs if mine != theirs]


@dataclass(frozen=True)
class LockedCriterion(JsonMixin):
    """One criterion of the locked candidate: "pass", "fail" or "not shown" (no GPU telemetry)."""

    name: str
    status: Literal["pass", "fail", "not shown"]
    summary: str
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class FailedCandidate(JsonMixin):
    candidate: str  # its label
    stage: Stage
    why: str


@dataclass(frozen=True)
class Lock(JsonMixin):
    """``zluda.lock``: the combination found, what it was proven on and with, and what was not proven."""

    release: LockedRelease
    variant: str
    mechanism: str  # how the release reaches the workload (the plan's bindings' mechanisms)
    settings: tuple[LockedSetting, ...]
    host: HostFacts
    workload: tuple[str, ...]
    criteria: tuple[LockedCriterion, ...]
    failed: tuple[FailedCandidate, ...] = ()
    proven_on_gpu: bool = False
    not_proven: tuple[str, ...] = ()  # what could not be proven here, in words
    env: Mapping[str, str] = field(default_factory=dict)  # the variant's change of the launch environment
    zluda_runner: str = ""  # the version that wrote it
    schema: int = LOCK_SCHEMA


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
        """Recorded (kind find): one row per candidate (ok = it passed every criterion judged here)."""
        rows = tuple(ResultRow(f"candidate:{v.candidate.label}", v.status, v.status != "fail",
                               f"{v.stage}: {v.why}") for v in self.verdicts)
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
