"""The trace report: what a workload asked of the driver, per process and merged.

Both sources (ZLUDA's own tracer logs and our interposer's count files) produce these.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from zluda_runner.core.serial import JsonMixin
from zluda_runner.results.recordable import ResultRow, ResultRows, number

TRACE_SCHEMA = 1
SOURCE_ZLUDA_LOG = "zluda-log"
SOURCE_INTERPOSER = "interposer"
_NEUTRAL = ("UNKNOWN", "NULL")  # no status: the tracer never saw one, or a pointer result


def is_failure(result: str) -> bool:
    """Whether a logged result is a failure: ``CUDA_ERROR_*``, a library's non-success status,
    a negative status number. Success names (``*_SUCCESS``, ``()``, ``0``), pointers and
    ``UNKNOWN`` (the tracer never saw a result) are not."""
    if result in _NEUTRAL or result == "()" or result.endswith("_SUCCESS") or result == "NVAPI_OK":
        return False
    if result.startswith("0x"):
        return False
    if result.lstrip("-").isdigit():
        return result.startswith("-")
    return True


@dataclass(frozen=True)
class FirstFailure(JsonMixin):
    result: str
    code: int | None = None
    call_number: int | None = None  # 1-based: the n-th call of this function failed first


@dataclass
class TraceCall(JsonMixin):
    function: str
    count: int = 0
    results: dict[str, int] = field(default_factory=dict)
    first_failure: FirstFailure | None = None
    nested: int = 0  # calls made while another traced call was running (ZLUDA logs only)
    missing_in_driver: bool = False  # exported by the interposer, absent from the real driver

    @property
    def failures(self) -> int:
        return sum(n for name, n in self.results.items() if is_failure(name))


@dataclass(frozen=True)
class ProcAddressLookup(JsonMixin):
    symbol: str
    version: int | None = None
    flags: int | None = None
    found: bool | None = None
    count: int = 1


@dataclass(frozen=True)
class ExportTableRequest(JsonMixin):
    guid: str
    found: bool | None = None
    count: int = 1


@dataclass
class TraceProcess(JsonMixin):
    """One traced process, as its trace file or ZLUDA log is read (the readers fill it in as they go;
    :func:`merge_processes` makes the frozen :class:`TraceReport` of them)."""

    pid: int | None
    source: str
    file: str = ""
    ppid: int | None = None
    argv: list[str] = field(default_factory=list)
    complete: bool = True
    calls: list[TraceCall] = field(default_factory=list)
    proc_address_lookups: list[ProcAddressLookup] = field(default_factory=list)
    export_tables: list[ExportTableRequest] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    name: str = ""  # ZLUDA logs: the folder, named after the executable (<exe>, <exe>_1, ...)
    executable: str = ""
    instance: int | None = None  # 0 for <exe>, N for <exe>_N: the order the tracer made them in
    log_format: str = ""  # zluda-trace (upstream rewrite) | zluda-dump (ZLUDA 3 / the fork)
    lines: int = 0
    messages: list[str] = field(default_factory=list)  # the tracer's own notes, first ones
    message_count: int = 0
    unknown_lines: list[str] = field(default_factory=list)  # neither a call nor a note, first ones
    unknown_count: int = 0

    @property
    def label(self) -> str:
        return self.name or (f"pid {self.pid}" if self.pid is not None else "?")


@dataclass(frozen=True)
class TraceReport(JsonMixin):
    """What a workload asked of the driver: every process, and their calls merged (made once, by
    :func:`merge_processes`)."""

    schema: int = TRACE_SCHEMA
    source: str = ""
    command: tuple[str, ...] = ()
    exit_code: int | None = None
    processes: tuple[TraceProcess, ...] = ()
    calls: tuple[TraceCall, ...] = ()
    proc_address_lookups: tuple[ProcAddressLookup, ...] = ()
    export_tables: tuple[ExportTableRequest, ...] = ()
    warnings: tuple[str, ...] = ()
    ended_by: str | None = None  # what killed the command ("SIGSEGV": core.proctree.ended_by); None: exited

    @property
    def total_calls(self) -> int:
        return sum(c.count for c in self.calls)

    def call(self, function: str) -> TraceCall | None:
        return next((c for c in self.calls if c.function == function), None)

    def result_rows(self) -> ResultRows:
        """Recorded (kind trace): one row per driver function, ok = no failing call, with its calls
        and failures (:class:`~zluda_runner.results.recordable.Recordable`)."""
        return ResultRows(rows=tuple(_call_row(c) for c in self.calls), summary={"exit_code": self.exit_code})


def _call_row(call: TraceCall) -> ResultRow:
    failures = call.failures
    first = call.first_failure
    detail = f"first failure {first.result} at call {first.call_number}" if first is not None else ""
    if call.missing_in_driver:
        detail = (detail + "; " if detail else "") + "missing in driver"
    return ResultRow(call.function, "fail" if failures else "pass", not failures, detail,
                     {"calls": number(call.count), "failures": float(failures)})


def merge_calls(groups: Iterable[Iterable[TraceCall]]) -> list[TraceCall]:
    merged: dict[str, TraceCall] = {}
    for group in groups:
        for call in group:
            into = merged.get(call.function)
            if into is None:
                merged[call.function] = TraceCall(
                    call.function,
                    call.count,
                    dict(call.results),
                    call.first_failure,
                    call.nested,
                    call.missing_in_driver,
                )
                continue
            into.count += call.count
            into.nested += call.nested
            into.missing_in_driver = into.missing_in_driver or call.missing_in_driver
            for name, n in call.results.items():
                into.results[name] = into.results.get(name, 0) + n
            if into.first_failure is None:
                into.first_failure = call.first_failure
    return sorted(merged.values(), key=lambda c: (-c.count, c.function))


Counted = TypeVar("Counted", ProcAddressLookup, ExportTableRequest)


def merge_counted(groups: Iterable[Iterable[Counted]]) -> list[Counted]:
    """Items equal but for their count once, in the order first seen, their counts summed."""
    merged: dict[Counted, Counted] = {}
    for item in itertools.chain.from_iterable(groups):
        key = replace(item, count=0)
        merged[key] = replace(merged[key], count=merged[key].count + item.count) if key in merged else item
    return list(merged.values())


def merge_processes(
    processes: list[TraceProcess],
    *,
    source: str,
    command: list[str] | None = None,
    exit_code: int | None = None,
    warnings: list[str] | None = None,
    ended_by: str | None = None,
) -> TraceReport:
    """One report: every process listed, and their calls, lookups and GUIDs merged."""
    all_warnings = list(warnings or [])
    for proc in processes:
        all_warnings += [f"{proc.label}: {w}" for w in proc.warnings]
    return TraceReport(
        source=source,
        command=tuple(command or ()),
        exit_code=exit_code,
        processes=tuple(processes),
        calls=tuple(merge_calls(p.calls for p in processes)),
        proc_address_lookups=tuple(merge_counted(p.proc_address_lookups for p in processes)),
        export_tables=tuple(merge_counted(p.export_tables for p in processes)),
        warnings=tuple(all_warnings),
        ended_by=ended_by,
    )
