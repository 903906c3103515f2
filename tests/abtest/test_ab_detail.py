"""``ab`` names what differs, as the probes do (the comparator's ``detail``): its text view, its page and
the row it records. Before, an ab disagreement gave the figure and the count only, and its recorded row
an empty detail: "which element?" needed a rerun with prints."""

from __future__ import annotations

import math

from tests.golden import assert_golden
from zluda_runner.abtest.compare import summarise
from zluda_runner.abtest.model import AbReport, Output, RunResult, SideSummary
from zluda_runner.probe import output_compare as oc
from zluda_runner.report.ab_view import ab_sections, render_html, render_text


def _report(a_values: tuple[float, ...], b_values: tuple[float, ...]) -> AbReport:
    runs = tuple(RunResult(side, 1, 0, 1.0, outputs=("x",)) for side in ("A", "B"))
    ran = AbReport(a=SideSummary("A", ("a",)), b=SideSummary("B", ("b",)), runs=runs)
    return summarise(ran, {"A": {"x": Output("x", "float32", (len(a_values),), a_values)},
                           "B": {"x": Output("x", "float32", (len(b_values),), b_values)}},
                     None, None)


def test_a_disagreement_names_the_element_in_text_page_and_record() -> None:
    report = _report((1.0, -2.0, math.inf, 4.0), (1.0, -2.0, 1.5, 4.0))
    (output,) = report.outputs
    said = "inf where the reference has 1.5 at index 2"
    assert output.status == "differ" and said in output.detail
    assert said in render_text(report) and said in render_html(report)
    (row,) = [r for r in report.result_rows().rows if r.item == "output:x"]
    assert said in row.detail


def test_a_finite_difference_names_the_largest_one_and_agreement_says_nothing() -> None:
    report = _report((1.0, 2.0, 3.5), (1.0, 2.0, 3.0))
    compared = oc.compare_values([1.0, 2.0, 3.5], [1.0, 2.0, 3.0], got_dtype="float32", want_dtype="float32")
    assert report.outputs[0].detail == compared.detail and compared.index == 2  # the comparator's words
    assert_golden("abtest-finite-difference", render_text(report) + "\n")  # element 2: 3.5 against 3
    agreeing = _report((1.0, 2.0, 3.0), (1.0, 2.0, 3.0))
    assert agreeing.outputs[0].status == "agree" and agreeing.outputs[0].detail == ""
    (outputs,) = [t for t in ab_sections(agreeing)[0].tables if t.title == "outputs"]
    assert [row["detail"] for row in outputs.rows] == [None]  # the column is there, empty
    assert "detail" in [column.key for column in outputs.columns]


def test_a_shape_mismatch_says_both_shapes() -> None:
    report = _report((1.0, 2.0, 3.0), (1.0, 2.0, 3.0, 4.0))
    (output,) = report.outputs
    assert output.status == "shape_mismatch" and "(3,)" in output.detail and "(4,)" in output.detail
