"""A NaN or an infinity against something else is reported for what it is (leftovers of 2026-12-01).

On 720a795 the one comparator (zluda_runner/probe/output_compare.py) caught ``inf`` against ``1.5``
(or ``-inf`` against ``inf``, ``nan`` against a number) but reported "max abs error 0": the figure was
taken over the finite pairs only, and nothing said which element differed or how. The quick torch
probe, the OpInfo probe and ``ab`` now all carry torch's own figure (``inf``, ``nan`` for a NaN on one
side, as ``torch.testing.assert_close`` reports its greatest absolute difference) and the element:
"inf where the reference has 1.5 at index 2"."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from tests.conftest import require
from tests.golden import assert_golden
from zluda_runner.abtest.compare import compare_output, summarise
from zluda_runner.abtest.model import AbReport, Output, RunResult, SideSummary
from zluda_runner.probe import output_compare as oc
from zluda_runner.report.ab_view import render_html, render_text

INF, NAN = math.inf, math.nan
WANT = [1.0, -2.0, 1.5, 4.0]
CASES = {  # name -> (the value put at index 2 on the device side, the reference's there, the figure, text)
    "inf_vs_number": (INF, 1.5, INF, "inf where the reference has 1.5 at index 2"),
    "minus_inf_vs_inf": (-INF, INF, INF, "-inf where the reference has inf at index 2"),
    "nan_vs_number": (NAN, 1.5, NAN, "nan where the reference has 1.5 at index 2"),
    "number_vs_nan": (1.5, NAN, NAN, "1.5 where the reference has nan at index 2"),
}


def _sides(case: str) -> tuple[list[float], list[float]]:
    got_at, want_at, _, _ = CASES[case]
    got, want = list(WANT), list(WANT)
    got[2], want[2] = got_at, want_at
    return got, want


def _same_figure(value: float | None, expected: float) -> bool:
    return value is not None and (math.isnan(value) if math.isnan(expected) else value == expected)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        require(False, "torch not installed (pip install torch==2.13.0)")
    return torch


@pytest.mark.parametrize("case", CASES)
def test_the_comparator_gives_the_figure_and_the_element(case: str) -> None:
    got, want = _sides(case)
    figure, text = CASES[case][2], CASES[case][3]
    verdict = oc.compare_values(got, want, got_dtype="float32", want_dtype="float32")
    assert verdict.status == "differ" and verdict.mismatched == 1 and verdict.elements == 4
    assert _same_figure(verdict.max_abs_error, figure), verdict
    assert verdict.max_abs_error != 0 and verdict.max_rel_error is None
    assert text in verdict.detail and (verdict.non_finite, verdict.index) == (1, 2), verdict


def test_a_finite_mismatch_names_its_largest_element_and_a_tensor_index() -> None:
    verdict = oc.compare_values([1.0, 2.0, 3.0, 9.0], [1.0, 2.0, 3.5, 4.0], got_dtype="float32",
                                want_dtype="float32", got_shape=[2, 2], want_shape=[2, 2])
    assert verdict.max_abs_error == 5.0 and verdict.mismatched == 2
    assert (verdict.non_finite, verdict.index) == (0, 3) and "(1, 1)" in verdict.detail  # 9 against 4, as 2x2
    mixed = oc.compare_values([9.0, INF], [1.0, 2.0], got_dtype="float32", want_dtype="float32")
    assert mixed.max_abs_error == INF
    assert (mixed.mismatched, mixed.non_finite, mixed.index) == (2, 1, 1)  # the infinity, not the larger 8


@pytest.mark.parametrize("case", CASES)
def test_the_three_paths_report_what_torch_reports(case: str) -> None:
    torch = _torch()
    from zluda_runner.probe.torch_opinfo import compare as opinfo_compare
    from zluda_runner.probe.torch_ops import _compare as quick_compare

    got_list, want_list = _sides(case)
    figure, text = CASES[case][2], CASES[case][3]
    got, want = torch.tensor(got_list), torch.tensor(want_list)
    with pytest.raises(AssertionError) as torch_says:  # the real thing: assert_close's own message
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3, equal_nan=True)
    greatest = re.search(r"Greatest absolute difference: (\S+) at index \((\d+),\)", str(torch_says.value))
    assert greatest is not None, str(torch_says.value)
    assert _same_figure(float(greatest.group(1)), figure) and greatest.group(2) == "2", greatest.group(0)

    ok, max_abs, max_rel, why = quick_compare(got, want)
    assert not ok and _same_figure(max_abs, figure) and max_rel is None and text in why, (max_abs, why)
    status, max_abs, _, why = opinfo_compare(got, want)
    assert status == "mismatch" and _same_figure(max_abs, figure) and why.startswith("output 0: ")
    assert text in why, why
    ab = compare_output(Output("x", "float32", (4,), tuple(got_list)), Output("x", "float32", (4,),
                                                                               tuple(want_list)))
    assert ab.status == "differ" and _same_figure(ab.max_abs_error, figure), ab


@pytest.mark.parametrize("case", CASES)
def test_the_probe_event_keeps_the_figure_and_the_text(case: str) -> None:
    """The probe scripts send their verdict as a JSON event from the target interpreter."""
    from zluda_runner.probe.model import op_case

    got, want = _sides(case)
    verdict = oc.compare_values(got, want, got_dtype="float32", want_dtype="float32")
    event = json.loads(json.dumps({"id": "add", "status": "mismatch", "max_abs_err": verdict.max_abs_error,
                                   "max_rel_err": verdict.max_rel_error, "detail": verdict.detail}))
    result = op_case(event, "add (float32)", "arith")
    assert _same_figure(result.max_abs_err, CASES[case][2]) and CASES[case][3] in result.detail


@pytest.mark.parametrize("case", CASES)
def test_ab_says_it_in_its_verdict_text_and_page(case: str) -> None:
    got, want = _sides(case)
    figure = CASES[case][2]
    runs = tuple(RunResult(side, 1, 0, 1.0, outputs=("x",)) for side in ("A", "B"))
    ran = AbReport(a=SideSummary("A", ("a",)), b=SideSummary("B", ("b",)), runs=runs)
    report = summarise(ran, {"A": {"x": Output("x", "float32", (4,), tuple(got))},
                             "B": {"x": Output("x", "float32", (4,), tuple(want))}}, None, None)
    shown = f"{figure:.3g}"  # inf, nan
    assert report.agree is False and _same_figure(report.outputs[0].max_abs_error, figure), report
    assert_golden(f"probe-ab-non-finite-{case}", render_text(report) + "\n")  # the figure, never 0
    assert f">{shown}<" in render_html(report)
