"""Reports record themselves (the Recordable protocol): the store keeps the rows each report gives, scrubbed,
and refuses what is not a report, rather than reading reports back as dicts by string keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.results import reports
from zluda_runner.results.recordable import Recordable, ResultRow, ResultRows, number
from zluda_runner.results.recording import build_run
from zluda_runner.results.schema import ResultsStoreError

KINDS_AND_REPORTS = [
    ("torch-ops", reports.torch_ops(3, {1})),
    ("trace", reports.trace_report()),
    ("ab", reports.ab_report(1.2)),
    ("verify-load", reports.verify_result(Path("/home/someone"))),
    ("doctor", reports.doctor_report()),
]


@pytest.mark.parametrize(("kind", "report"), KINDS_AND_REPORTS, ids=[k for k, _ in KINDS_AND_REPORTS])
def test_every_report_is_recordable_and_its_rows_are_the_items(kind: str, report: object) -> None:
    assert isinstance(report, Recordable)
    rows = report.result_rows()
    run = build_run(kind, report, command=["zluda-run", kind], host=reports.HOST,
                    started_at="2025-07-01T10:00:00.000000Z")
    assert [(i.item, i.status, i.ok) for i in run.items] == [(r.item, r.status, r.ok) for r in rows.rows]
    assert run.summary["items"] == len(rows.rows)
    assert all(run.summary[k] == v for k, v in rows.summary.items() if v is not None)


def test_rows_are_scrubbed_where_they_are_stored() -> None:
    class Report:
        def result_rows(self) -> ResultRows:
            return ResultRows((ResultRow("case", "fail", False, "cannot open /home/someone/lib/x.so"),),
                              {"verdict": "see /home/someone/log"})

    run = build_run("probe", Report(), command=[], host=reports.HOST)
    assert run.items[0].detail == "cannot open ~/lib/x.so" and run.summary["verdict"] == "see ~/log"


def test_what_is_not_a_report_is_refused_naming_the_protocol() -> None:
    plain = {"cases": [{"id": "x", "status": "pass"}]}  # a report's dict is no longer read by its keys
    with pytest.raises(ResultsStoreError, match="result_rows"):
        build_run("probe", plain, command=[], host=reports.HOST)


def test_a_doctor_report_s_host_facts_give_the_fingerprint() -> None:
    run = build_run("doctor", reports.doctor_report(), command=["zluda-run", "doctor"])
    assert run.host["gfx"] == "gfx1100"  # from the report's facts; nothing about the host was passed


def test_numbers_are_finite_floats() -> None:
    assert [number(v) for v in (1, 2.5, True, float("nan"), float("inf"), "3", None)] == \
        [1.0, 2.5, None, None, None, None, None]
