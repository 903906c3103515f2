"""The rows of a report, for the results store.

Every report of zluda-runner records itself: it implements
:class:`~zluda_runner.results.recordable.Recordable` in its own stage (probe and torch ops:
``ProbeReport``, trace: ``TraceReport``, ab: ``AbReport``, verify-load: ``VerifyResult``, doctor:
``DoctorReport``, poc: ``PocReport``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from zluda_runner.results.fingerprint import Scrubber
from zluda_runner.results.recordable import Recordable, ResultRows, numbers_of, ok_value, text_of
from zluda_runner.results.schema import (
    COUNT_KEYS,
    KINDS,
    MAX_ITEMS_PER_RUN,
    MAX_KEY,
    MAX_KEYS,
    MAX_NAME,
    SUMMARY_TEXT_KEYS,
    ResultRow,
    ResultsStoreError,
)


def _not_recordable(report: object) -> ResultsStoreError:
    return ResultsStoreError(
        f"cannot record a {type(report).__name__}: it is not a report the store knows (no result_rows())",
        "pass one of zluda-runner's report objects (a probe, trace, A/B, verify-load, doctor or poc report)",
    )


def rows_of(kind: str, report: object) -> ResultRows:
    """What ``report`` records as a run of ``kind`` (raises ResultsStoreError)."""
    if kind not in KINDS:
        raise ResultsStoreError(f"unknown kind of run {kind!r}", f"one of: {', '.join(KINDS)}")
    if not isinstance(report, Recordable):
        raise _not_recordable(report)
    rows = report.result_rows()
    what = f"{type(report).__name__}.result_rows()"
    if not isinstance(rows, ResultRows):
        raise _bad_rows(f"{what} gave a {type(rows).__name__}, not a ResultRows")
    if isinstance(rows.rows, str | bytes) or not isinstance(rows.rows, Sequence):
        raise _bad_rows(f"{what} gave rows as a {type(rows.rows).__name__}, not a tuple of ResultRow")
    wrong = next((r for r in rows.rows if not isinstance(r, ResultRow)), None)
    if wrong is not None:
        raise _bad_rows(f"{what} gave a row that is a {type(wrong).__name__}, not a ResultRow")
    if not isinstance(rows.summary, Mapping):
        raise _bad_rows(f"{what} gave a summary that is a {type(rows.summary).__name__}, not a mapping")
    return rows


def _bad_rows(what: str) -> ResultsStoreError:
    return ResultsStoreError(f"cannot record this report: {what}",
                             "result_rows() returns ResultRows(rows=(ResultRow(item, status, ok), ...)), "
                             "see zluda_runner.ResultRows")


def items_of(kind: str, rows: ResultRows, scrubber: Scrubber) -> tuple[list[ResultRow], dict[str, Any]]:
    """The items of a run's rows, scrubbed and bounded, and its summary fields beside the counts
    (verdict, exit code: None values dropped)."""
    if len(rows.rows) > MAX_ITEMS_PER_RUN:
        raise ResultsStoreError(
            f"a {kind} run with {len(rows.rows)} items is more than the store keeps ({MAX_ITEMS_PER_RUN})",
            "record a smaller run",
        )
    items = [ResultRow(scrubber.text(text_of(r.item), MAX_NAME), text_of(r.status)[:MAX_NAME],
                       ok_value(r.ok), scrubber.text(text_of(r.detail)), numbers_of(r.numbers))
             for r in rows.rows]
    return items, _summary(rows.summary)


# What a bundle's reader (zluda_runner.results.bundle) accepts is what a run may hold: a row or summary
# value of another type is brought to that type here, or left out, so that every run stored can be
# exported and imported again (one value that import refuses would make the whole bundle refused).
_MAX_EXIT = 1 << 32


def _summary(summary: Mapping[str, object]) -> dict[str, Any]:
    """The summary fields beside the counts (which are counted, never given): None values dropped,
    the known fields of their type, plain finite values only, as many as a run keeps."""
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if len(out) >= MAX_KEYS - len(COUNT_KEYS):
            break
        kept = _summary_value(str(key), value)
        if kept is not None and key not in COUNT_KEYS:
            out[text_of(key)[:MAX_KEY]] = kept
    return out


def _summary_value(key: str, value: object) -> str | int | float | bool | None:
    """``value`` as a run's summary keeps it under ``key``; None: not kept."""
    if key in SUMMARY_TEXT_KEYS:
        return None if value is None else text_of(value)
    if key == "agree":
        return value if isinstance(value, bool) else None
    if key == "exit_code":
        ok = isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _MAX_EXIT
        return value if ok and isinstance(value, int) else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value if value is None or isinstance(value, str | int | bool) else text_of(value)
