"""The A/B text view fits the terminal (issue 27, point 8: every view fits 80 columns): its per-output
line (the figures, the tolerance each element must meet, the dtypes and shape), the comparator's detail
and the verdict fold at spaces under their own indent; piped, nothing is folded."""

from __future__ import annotations

from zluda_runner.abtest.compare import summarise
from zluda_runner.abtest.model import AbReport, Output, RunResult, SideSummary
from zluda_runner.report.ab_view import render_text


def _report() -> AbReport:
    runs = tuple(RunResult(side, 1, 0, 1.0, outputs=("logits",)) for side in ("A", "B"))
    ran = AbReport(a=SideSummary("A", ("a",)), b=SideSummary("B", ("b",)), runs=runs)
    return summarise(ran, {"A": {"logits": Output("logits", "float32", (3,), (1.0, 2.0, 3.5))},
                           "B": {"logits": Output("logits", "float32", (3,), (1.0, 2.0, 3.0))}}, None, None)


def test_every_line_fits_80_columns_and_says_the_same_words() -> None:
    report = _report()
    piped, fitted = render_text(report, width=None), render_text(report, width=80)
    assert max(map(len, piped.splitlines())) > 80  # there was something to fold
    assert max(map(len, fitted.splitlines())) <= 80
    assert fitted.split() == piped.split()  # the same words, in order: only where lines break differs
