"""``--json`` output is JSON any reader takes: Python's ``json`` writes ``Infinity`` and ``NaN`` for a
non-finite float, which JSON has not (``jq``, JavaScript's JSON.parse and PostgreSQL's jsonb refuse the
document).  Found when the comparator began reporting torch's own figure for an inf against a number:
``ab --json`` printed ``"max_abs_error": Infinity``.  Such a figure is ``null``; the text views say it."""

from __future__ import annotations

import json
import math

import pytest

from zluda_runner.abtest.compare import summarise
from zluda_runner.abtest.model import AbReport, Output, RunResult, SideSummary
from zluda_runner.commands.common import emit_json
from zluda_runner.core.version import JSON_SCHEMA_VERSION


def _strict(text: str) -> object:
    def refuse(word: str) -> object:
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("odd", [math.inf, -math.inf, math.nan])
def test_an_ab_report_with_a_non_finite_figure_is_strict_json(odd: float,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    runs = tuple(RunResult(side, 1, 0, 1.0, outputs=("x",)) for side in ("A", "B"))
    ran = AbReport(a=SideSummary("A", ("a",)), b=SideSummary("B", ("b",)), runs=runs)
    report = summarise(ran, {"A": {"x": Output("x", "float32", (3,), (1.0, odd, 3.0))},
                             "B": {"x": Output("x", "float32", (3,), (1.0, 1.5, 3.0))}}, None, None)
    assert report.agree is False
    emit_json(report)
    data = _strict(capsys.readouterr().out)
    assert isinstance(data, dict)
    (output,) = data["outputs"]
    assert output["status"] == "differ" and output["max_abs_error"] is None


def test_finite_figures_and_nesting_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    emit_json({"a": [1.5, {"b": math.inf, "c": 0.0}], "d": True, "e": 3})
    expected = {"schema": JSON_SCHEMA_VERSION, "a": [1.5, {"b": None, "c": 0.0}], "d": True, "e": 3}
    assert _strict(capsys.readouterr().out) == expected
