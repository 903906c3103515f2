"""What a report gives the results store: typed rows, through the :class:`Recordable` protocol.

A report (probe, torch ops, trace, A/B, verify-load, doctor) says itself what it records, in its own
stage: ``report.result_rows()`` returns :class:`ResultRows`, one :class:`ResultRow` per case, op,
traced function, binding or check, and the summary fields that are not counts (a verdict, the exit
code). The store never reads a report back as a dict by string keys, and results/ imports no stage
above it: the reports import this module. Recording scrubs and bounds what it is given
(:mod:`zluda_runner.results.recording`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from zluda_runner.results.schema import MAX_KEY, MAX_KEYS, clean_text
from zluda_runner.results.schema import ResultRow as ResultRow  # the row a report gives is the row kept

if TYPE_CHECKING:
    from zluda_runner.host.facts import HostFacts

# A summary value the store keeps beside the counts (verdict, exit code, agree ...): JSON scalars.
SummaryValue = str | int | float | bool | None


@dataclass(frozen=True)
class ResultRows:
    """What a report records: its rows, the summary fields beside the counts (None values are not
    kept), and for a doctor report the host facts the run's fingerprint is read from."""

    rows: tuple[ResultRow, ...]
    summary: Mapping[str, SummaryValue] = field(default_factory=dict)
    host_facts: HostFacts | None = None


@runtime_checkable
class Recordable(Protocol):
    """A report the results store can keep: any object whose ``result_rows()`` gives its ResultRows."""

    def result_rows(self) -> ResultRows:
        """The rows and summary this report records."""
        ...


def number(value: object) -> float | None:
    """A finite number as a float (what a row's ``numbers`` hold); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        as_float = float(value)
    except OverflowError:  # an int past float's range
        return None
    return as_float if math.isfinite(as_float) else None


def ok_value(value: object) -> bool | None:
    """A row's ``ok``: True or False (1 or 0, as the store keeps it); anything else (another program's
    value in the store) is neither passing nor failing."""
    if value is None or isinstance(value, bool):
        return value
    return bool(value) if isinstance(value, int) and value in (0, 1) else None


def text_of(value: object) -> str:
    """A row's text as text: a store's column as another program may have left it (a BLOB decoded, invalid
    UTF-8 as U+FFFD), None as nothing, anything else as ``str`` gives it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return clean_text(bytes(value).decode("utf-8", "replace"))
    return "" if value is None else str(value)


def numbers_of(value: object) -> dict[str, float | None]:
    """An item's numbers as a run keeps them (as many keys as a run keeps), anything not a finite number
    (Infinity, NaN, text, an int past float's range) as None; no mapping: none."""
    if not isinstance(value, Mapping):
        return {}
    return {text_of(k)[:MAX_KEY]: number(v) for k, v in list(value.items())[:MAX_KEYS]}
