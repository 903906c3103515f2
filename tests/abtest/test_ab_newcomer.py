"""Issue 29, a newcomer's first bullet: the README's "disagreement" example of ``ab`` really disagrees
(on 7859508 its ``--offset 0.001`` equalled the tolerance across backends, so it reported "agree"), the
text view says what its figures are (|A-B|, |A-B|/|B|, the tolerance each element is held to), and a
disagreement names the largest difference as well as both values."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from tests.golden import assert_golden
from zluda_runner.abtest.compare import summarise
from zluda_runner.abtest.model import AbReport, Output, RunResult, SideSummary
from zluda_runner.abtest.run import run_ab
from zluda_runner.report.ab_view import render_text

REPO = Path(__file__).resolve().parents[2]


def _readme_offset() -> float:
    """The ``--offset`` of the README's ``ab --a-cmd ... ab_demo.py`` example (the demo's docstring too)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    demo_doc = (REPO / "examples" / "ab_demo.py").read_text(encoding="utf-8")
    offsets = set()
    for text in (readme, demo_doc):
        (line,) = [x for x in text.splitlines() if "ab_demo.py --offset" in x]
        a_cmd = shlex.split(line)[shlex.split(line).index("--a-cmd") + 1]
        words = shlex.split(a_cmd)
        offsets.add(float(words[words.index("--offset") + 1]))
    (offset,) = offsets  # the README and the demo give the same example
    return offset


def test_the_readme_disagreement_example_disagrees() -> None:
    offset = _readme_offset()
    demo = [sys.executable, str(REPO / "examples" / "ab_demo.py"), "--size", "32", "--repeat", "1"]
    report = run_ab([*demo, "--offset", repr(offset)], demo, runs=1)
    product = {c.name: c for c in report.outputs}["product"]
    assert report.exit_code == 3 and report.agree is False
    assert product.status == "differ" and product.mismatched == product.elements == 32 * 32
    assert product.atol is not None and offset > product.atol  # the offset is past the tolerance


def _report(a_values: tuple[float, ...], b_values: tuple[float, ...]) -> AbReport:
    runs = tuple(RunResult(side, 1, 0, 1.0, outputs=("x",)) for side in ("A", "B"))
    ran = AbReport(a=SideSummary("A", ("python", "a.py")), b=SideSummary("B", ("python", "b.py")), runs=runs)
    return summarise(ran, {"A": {"x": Output("x", "float32", (2, 2), a_values)},
                           "B": {"x": Output("x", "float32", (2, 2), b_values)}}, None, None)


def test_the_text_view_says_what_its_figures_are() -> None:
    # agree: an element near 0 has a large |A-B|/|B| within the tolerance; differ: the largest difference
    agree = _report((1.0, 0.0011, -4.3956, 2.0), (1.0, 0.0002, -4.3956, 2.0))
    differ = _report((1.0, 0.0011, -4.3856, 2.0), (1.0, 0.0002, -4.3956, 2.0))
    assert agree.outputs[0].status == "agree" and agree.outputs[0].max_rel_error is not None
    assert agree.outputs[0].max_rel_error > 1  # the figure that confused: within the tolerance all the same
    assert differ.outputs[0].status == "differ" and differ.outputs[0].mismatched == 1
    assert_golden("ab-text-agree-and-differ", render_text(agree) + "\n---\n" + render_text(differ))


def test_a_disagreement_gives_the_difference_and_both_values() -> None:
    differ = _report((1.0, 0.0, -4.3856, 2.0), (1.0, 0.0, -4.3956, 2.0))
    detail = differ.outputs[0].detail
    figures = [float(x) for x in re.findall(r"-?\d+\.\d+", detail.split("the largest difference:", 1)[1])]
    assert figures[:3] == [0.01, -4.3856, -4.3956]  # the difference, A's value, B's (the reference)
