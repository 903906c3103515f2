"""Comparing the two sides: outputs (probe/output_compare.py, argmax agreement for logits),
timings (median, min, max, the A/B ratio of medians), problems, and the one-line verdict.

Outputs are compared from each side's first run that recorded them; timings pool every
run's samples.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Mapping, Sequence

from zluda_runner.abtest.model import (
    AbReport,
    Faster,
    Output,
    OutputComparison,
    RunResult,
    SideSummary,
    TimingComparison,
    TimingStats,
)
from zluda_runner.probe.output_compare import compare_values

TIE_MARGIN = 0.03  # medians within 3% are "about the same"


def compare_output(
    a: Output, b: Output, rtol: float | None = None, atol: float | None = None
) -> OutputComparison:
    """Compare A against B (B, the native side, is the reference for the relative error), by the
    comparator the torch probes use (zluda_runner/probe/output_compare.py: torch's rule and per-dtype
    tolerances, the looser of the two dtypes, across backends); ``rtol``/``atol`` replace them."""
    verdict = compare_values(a.values, b.values, got_dtype=a.dtype, want_dtype=b.dtype, got_shape=a.shape,
                             want_shape=b.shape, rtol=rtol, atol=atol)
    if verdict.status == "shape_mismatch":
        return OutputComparison(name=a.name, status="shape_mismatch", dtype_a=a.dtype, dtype_b=b.dtype,
                                shape_a=a.shape, shape_b=b.shape, detail=verdict.detail)
    is_logits = a.logits if a.logits is not None else "logit" in a.name.lower()
    agreement = None
    if is_logits and a.shape and a.shape[-1] > 1:
        agreement = argmax_agreement(a.values, b.values, a.shape[-1])
    return OutputComparison(
        name=a.name, status=verdict.status, dtype_a=a.dtype, dtype_b=b.dtype, shape_a=a.shape,
        shape_b=b.shape, max_abs_error=verdict.max_abs_error,
        max_rel_error=verdict.max_rel_error, rtol=verdict.rtol, atol=verdict.atol,
        mismatched=verdict.mismatched, elements=verdict.elements, argmax_agreement=agreement,
        detail=verdict.detail if verdict.status != "agree" else "",
    )


def argmax_agreement(a: Sequence[float], b: Sequence[float], width: int) -> float:
    """Fraction of rows (last dimension ``width``) whose argmax is the same on both sides."""
    rows = len(a) // width
    if rows == 0:
        return 1.0
    same = 0
    for r in range(rows):
        ra, rb = a[r * width : (r + 1) * width], b[r * width : (r + 1) * width]
        if max(range(width), key=ra.__getitem__) == max(range(width), key=rb.__getitem__):
            same += 1
    return same / rows


def timing_stats(samples: Sequence[float]) -> TimingStats | None:
    if not samples:
        return None
    return TimingStats(len(samples), statistics.median(samples), min(samples), max(samples))


def _faster(a: TimingStats | None, b: TimingStats | None) -> tuple[float | None, Faster | None]:
    if a is None or b is None or b.median_s <= 0:
        return None, None
    ratio = a.median_s / b.median_s
    if abs(ratio - 1.0) <= TIE_MARGIN:
        return ratio, "same"
    return ratio, "A" if ratio < 1.0 else "B"


def summarise(
    report: AbReport, first: Mapping[str, Mapping[str, Output]], rtol: float | None, atol: float | None
) -> AbReport:
    """``report`` (its sides and runs) finished: each side counted, the outputs of ``first`` (each
    side's first run that recorded them) and the pooled timings compared, the problems and the verdict."""
    problems: list[str] = []
    a, b = (_side(summary, report.runs, problems) for summary in (report.a, report.b))
    outputs = compare_outputs(first["A"], first["B"], rtol, atol)
    pooled: dict[str, dict[str, list[float]]] = {"A": {}, "B": {}}
    for run in report.runs:
        for name, samples in run.timings.items():
            pooled[run.side].setdefault(name, []).extend(samples)
    timings: list[TimingComparison] = []
    for name in sorted(set(pooled["A"]) | set(pooled["B"])):
        stats_a, stats_b = timing_stats(pooled["A"].get(name, [])), timing_stats(pooled["B"].get(name, []))
        ratio, faster = _faster(stats_a, stats_b)
        timings.append(TimingComparison(name, stats_a, stats_b, ratio, faster))
    for cmp in outputs:
        if cmp.status == "shape_mismatch":
            problems.append(
                f"output {cmp.name!r}: shape {_shape(cmp.shape_a)} on A vs {_shape(cmp.shape_b)} on B"
            )
        elif cmp.status.startswith("missing_in_"):
            problems.append(
                f"output {cmp.name!r} was recorded only on side "
                f"{'A' if cmp.status == 'missing_in_b' else 'B'}"
            )
    agree = all(c.status == "agree" for c in outputs) if outputs else None
    compared = dataclasses.replace(report, a=a, b=b, outputs=outputs, timings=tuple(timings), agree=agree,
                                   problems=tuple(problems))
    faster, verdict = _verdict(compared)
    return dataclasses.replace(compared, faster=faster, verdict=verdict)


def _shape(shape: Sequence[int] | None) -> list[int] | None:
    """A shape as the problem text has always shown it (a list)."""
    return None if shape is None else list(shape)


def _side(summary: SideSummary, runs: Sequence[RunResult], problems: list[str]) -> SideSummary:
    """``summary`` with its runs counted; a side that failed or recorded nothing adds a problem."""
    side_runs = [r for r in runs if r.side == summary.label]
    counted = dataclasses.replace(
        summary,
        runs=len(side_runs),
        failed_runs=sum(1 for r in side_runs if r.exit_code != 0),
        recorded_nothing=sum(1 for r in side_runs if not r.outputs and not r.timings),
        wall=timing_stats([r.wall_s for r in side_runs if r.exit_code == 0]),
    )
    if counted.failed_runs:
        last = next(r for r in reversed(side_runs) if r.exit_code != 0)
        why = _last_error_line(last.stderr_tail)
        problems.append(
            f"side {counted.label} failed in {counted.failed_runs}/{counted.runs} run(s) "
            f"({last.error}){': ' + why if why else ''}"
        )
    elif counted.recorded_nothing == counted.runs:
        problems.append(
            f"side {counted.label} recorded nothing (does the script call ab.record / "
            "ab.timer? is zluda_runner.ab importable there?)"
        )
    return counted


def compare_outputs(names_a: Mapping[str, Output], names_b: Mapping[str, Output], rtol: float | None,
                    atol: float | Callable[[Output, Output], float | None] | None
                    ) -> tuple[OutputComparison, ...]:
    """Each output of A against B's of the same name (B the reference); ``atol``: a figure, or one per
    pair (poc's, scaled to the reference's values)."""
    compared: list[OutputComparison] = []
    for name in sorted(set(names_a) | set(names_b), key=lambda n: (n not in names_a, n)):
        if name not in names_b:
            compared.append(
                OutputComparison(
                    name=name, status="missing_in_b", dtype_a=names_a[name].dtype, shape_a=names_a[name].shape
                )
            )
        elif name not in names_a:
            compared.append(
                OutputComparison(
                    name=name, status="missing_in_a", dtype_b=names_b[name].dtype, shape_b=names_b[name].shape
                )
            )
        else:
            a, b = names_a[name], names_b[name]
            compared.append(compare_output(a, b, rtol, atol(a, b) if callable(atol) else atol))
    return tuple(compared)


def _last_error_line(stderr: str) -> str:
    """The line that says why: zluda-run's own ``error: ...`` when it refused, else the last line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    own = [line for line in lines if line.startswith("error: ")]
    return (own or lines or [""])[-1]


def _verdict(report: AbReport) -> tuple[Faster | None, str]:
    """Which side is faster on the region that takes longest, and the one-line verdict."""
    parts: list[str] = []
    faster: Faster | None = None
    timed = [t for t in report.timings if t.faster is not None and t.a and t.b]
    # the verdict speaks of the region that takes longest: it dominates what a user waits for
    basis = max(timed, key=lambda t: t.a.median_s + t.b.median_s, default=None)  # type: ignore[union-attr]
    if basis is None and report.a.wall and report.b.wall:
        ratio, faster = _faster(report.a.wall, report.b.wall)
        basis = TimingComparison("whole run", report.a.wall, report.b.wall, ratio, faster)
    if basis is not None and basis.a and basis.b and basis.ratio_a_over_b is not None:
        faster = basis.faster
        a_s, b_s = basis.a.median_s, basis.b.median_s
        if basis.faster == "same":
            parts.append(
                f"A and B take about the same time on {basis.name!r} (median {a_s:.3g} s vs {b_s:.3g} s)"
            )
        else:
            fast, slow = ("A", "B") if basis.faster == "A" else ("B", "A")
            factor = max(basis.ratio_a_over_b, 1 / basis.ratio_a_over_b)
            parts.append(
                f"{fast} is {factor:.2f}x faster than {slow} on {basis.name!r} "
                f"(median {a_s:.3g} s on A vs {b_s:.3g} s on B)"
            )
    else:
        parts.append("no timing to compare")
    if report.agree is True:
        parts.append(f"outputs agree ({len(report.outputs)} compared)")
    elif report.agree is False:
        bad = [c for c in report.outputs if c.status != "agree"]
        worst = bad[0]
        if worst.status == "differ":
            parts.append(
                f"outputs DISAGREE: {worst.name!r} max abs error {worst.max_abs_error:.3g} "
                f"({worst.mismatched}/{worst.elements} elements outside rtol={worst.rtol:g}, "
                f"atol={worst.atol:g})"
            )
        else:
            parts.append(f"outputs DISAGREE: {worst.name!r} {worst.status.replace('_', ' ')}")
    else:
        parts.append("no outputs to compare")
    text = "; ".join(parts)
    if report.problems:
        text += ". Problems: " + " | ".join(report.problems)
    return faster, text


