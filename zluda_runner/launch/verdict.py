"""What ``--verify-load`` found: the evidence per planned binding and the run's verdict, the same records
for Linux (the loader's log: :mod:`zluda_runner.launch.verify`) and Windows (the process's module list:
:mod:`zluda_runner.launch.windows.verify`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.core.serial import JsonMixin
from zluda_runner.results.recordable import ResultRow, ResultRows


@dataclass
class BindingEvidence(JsonMixin):
    """For one planned binding: the file the loader actually took, and its own words."""

    name: str
    expected: Path
    actual: Path | None
    taken: bool
    loader_lines: list[str] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)  # processes in which the expected file was mapped


TAKEN, UNUSED, NOT_TAKEN, UNPROVEN = "taken", "unused", "not-taken", "unproven"

@dataclass
class VerifyResult(JsonMixin):
    """The run's exit status, what the loader said when it failed, and the evidence per binding."""

    exit_code: int
    bindings: list[BindingEvidence] = field(default_factory=list)
    loader_errors: list[str] = field(default_factory=list)  # ld.so's own words, from the run's stderr
    signal: int | None = None  # the run was killed by this signal
    evidence: str = "LD_DEBUG"  # or "module list" (Windows: the process's modules at exit)
    unproven: str | None = None  # why nothing could be proven (Windows: no module list was written)
    processes: int | None = None  # how many processes wrote a module list (Windows)
    stopped_by: int | None = None  # the signal from outside (Ctrl-C, kill, a closed pipe) that ended the run
    # ld.so's words on what it skipped and went on without, none of it planned (the user's own LD_PRELOAD
    # naming a library that is not there): said, not a failure
    loader_warnings: list[str] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        """Ctrl-C (exit 130), or a signal the user sent zluda-run, ended the run: the user's decision,
        passed on as such (its exit code, not a failed check)."""
        return self.exit_code == 130 or self.stopped_by is not None

    @property
    def died_loading(self) -> bool:
        """The process did not get past loading: ld.so (or a dlopen) failed, or a signal (not one the
        user sent) killed it. An exit code above 128 is not a signal: ``exit 137`` is an exit."""
        return bool(self.loader_errors) or (self.signal is not None and not self.interrupted)

    def state(self, ev: BindingEvidence) -> str:
        """taken (only in a run that got past loading); unused (never asked for); unproven (the run
        died loading, or left no evidence); not-taken (the loader took another file)."""
        if ev.actual is not None and not ev.taken and ev.pids:
            return NOT_TAKEN
        if self.unproven is not None:
            return UNPROVEN
        if self.died_loading:
            return UNPROVEN if ev.taken or ev.loader_lines else UNUSED
        if ev.taken:
            return TAKEN
        if ev.actual is None and not ev.loader_lines:
            return UNUSED
        return NOT_TAKEN

    @property
    def failed(self) -> bool:
        """A died load, no evidence at all, or a planned binding the loader resolved to another file,
        is a failure."""
        return (self.died_loading or self.unproven is not None
                or any(self.state(ev) == NOT_TAKEN for ev in self.bindings))

    @property
    def all_taken(self) -> bool:
        return not self.died_loading and all(b.taken for b in self.bindings)

    def command_exit_code(self) -> int:
        """The workload's code when the user stopped the run (Ctrl-C: 130, ``kill``: 143), whatever was
        proven by then; else 3 (a check failed) when the verification failed, else the workload's own
        exit code."""
        if self.interrupted:
            return self.exit_code
        return CHECK_FAILED if self.failed else self.exit_code

    def result_rows(self) -> ResultRows:
        """Recorded (kind verify-load): one row per planned binding, taken or not, with the file the
        loader took (:class:`~zluda_runner.results.recordable.Recordable`)."""
        return ResultRows(
            rows=tuple(ResultRow(ev.name, "taken" if ev.taken else "not-taken", ev.taken,
                                 str(ev.actual or "not loaded")) for ev in self.bindings),
            summary={"exit_code": self.exit_code},
        )

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        for ev, item in zip(self.bindings, data["bindings"], strict=True):
            item["state"] = self.state(ev)
        data["ok"] = not self.failed
        return data
