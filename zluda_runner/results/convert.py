"""The rows of a report, for the results store.

Every report of zluda-runner records itself: it implements
:class:`~zluda_runner.results.recordable.Recordable` in its own stage (probe and torch ops:
``ProbeReport``, trace: ``TraceReport``, ab: ``AbReport``, verify-load: ``VerifyResult``, doctor:
``DoctorReport``, poc: ``PocReport``).
"""

from __future__ import annotations

from typing import Any

from zluda_runner.results.fingerprint import Scrubber
from zluda_runner.results.recordable import Recordable, ResultRows
from zluda_runner.results.schema import KINDS, MAX_ITEMS_PER_RUN, MAX_NAME, ItemRecord, ResultsStoreError


def _not_recordable(report: object) -> ResultsStoreError:
    return ResultsStoreError(
        f"cannot record a {type(report).__name__}: it is not a report the store knows (no result_rows())",
        "pass one of zluda-runner's report objects (a probe, trace, A/B, verify-load, doctor or poc report)",
    )


def rows_of(kind: str, report: object) -> ResultRows:
    """What ``report`` records as a run of ``kind`` (raises ResultsStoreError)."""
    if kind not in KINDS:
        raise ResultsStoreError(f"unknown kind of run {kind!r}", f"one of: {', '.join(KINDS)}")
    if isinstance(report, Recordable):
        return report.result_rows()
    raise _not_recordable(report)


def items_of(kind: str, rows: ResultRows, scrubber: Scrubber) -> tuple[list[ItemRecord], dict[str, Any]]:
    """The items of a run's rows, scrubbed and bounded, and its summary fields beside the counts
    (verdict, exit code: None values dropped)."""
    if len(rows.rows) > MAX_ITEMS_PER_RUN:
        raise ResultsStoreError(
            f"a {kind} run with {len(rows.rows)} items is more than the store keeps ({MAX_ITEMS_PER_RUN})",
            "record a smaller run",
        )
    items = [ItemRecord(scrubber.text(r.item, MAX_NAME), r.status, r.ok, scrubber.text(r.detail),
                        dict(r.numbers)) for r in rows.rows]
    return items, {k: v for k, v in rows.summary.items() if v is not None}


