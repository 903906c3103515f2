"""The A/B report as text and as a self-contained HTML page (the shared report renderer)."""

from __future__ import annotations

import math
import shlex

from zluda_runner.abtest.model import AbReport, TimingStats
from zluda_runner.core.textfit import view_width, wrap_words
from zluda_runner.report.html import render_html as report_html
from zluda_runner.report.table import Column, Section, Table


def render_text(report: AbReport, width: int | None = -1) -> str:
    """The report as text, each line folded at spaces to ``width`` (default: COLUMNS or the terminal's;
    unfolded when piped), later lines of a fold indented under its own."""
    width = view_width() if width == -1 else width
    lines = [f"A: {shlex.join(report.a.argv)}", f"B: {shlex.join(report.b.argv)}", ""]
    if report.outputs:
        lines.append("outputs:")
        for c in report.outputs:
            if c.status in ("agree", "differ"):
                extra = f", argmax agree {c.argmax_agreement:.0%}" if c.argmax_agreement is not None else ""
                rel = f"{c.max_rel_error:.3g}" if c.max_rel_error is not None else "n/a"
                allowed = (f"; each element must be within |A-B| <= {c.atol:g} + {c.rtol:g}*|B|"
                           if c.atol is not None and c.rtol is not None else "")
                lines.append(  # B is the reference: the figures are the largest over the elements
                    f"  {c.name:<20} {c.status:<7} largest |A-B| {_abs_text(c.max_abs_error)}, largest "
                    f"|A-B|/|B| {rel}{allowed} ({c.dtype_a}/{c.dtype_b}, {c.shape_a}){extra}"
                )
                if c.detail:
                    lines.append(f"  {'':<20} {c.detail}")
            else:
                lines.append(f"  {c.name:<20} {c.status}")
    if report.timings:
        lines.append("timings (median / min / max, seconds):")
        for t in report.timings:
            a = f"{t.a.median_s:.4g}/{t.a.min_s:.4g}/{t.a.max_s:.4g}" if t.a else "-"
            b = f"{t.b.median_s:.4g}/{t.b.min_s:.4g}/{t.b.max_s:.4g}" if t.b else "-"
            ratio = f"A/B {t.ratio_a_over_b:.2f}" if t.ratio_a_over_b is not None else ""
            lines.append(f"  {t.name:<20} A {a}  B {b}  {ratio}")
    lines += ["", f"verdict: {report.verdict}"]
    return "\n".join(folded for line in lines for folded in _fit(line, width))


def _fit(line: str, width: int | None) -> list[str]:
    if width is None or len(line) <= width:
        return [line]
    indent = len(line) - len(line.lstrip(" "))
    return wrap_words(line[indent:], width, first=" " * indent, rest=" " * (indent + 4))


def _abs_text(value: float | None) -> str:
    """The comparator's max abs error: ``inf``/``nan`` (torch's figure) where a NaN or an infinity
    stands against something else is said as such, not left to look like a number."""
    if value is None:
        return "n/a"
    if not math.isfinite(value):
        return f"{value:.3g} (a NaN or an infinity the other side does not have)"
    return f"{value:.3g}"


_ROW_STATUS = {  # output status -> the shared report's status vocabulary (colour, filter)
    "agree": "ok",
    "differ": "mismatch",
    "shape_mismatch": "mismatch",
    "missing_in_a": "missing",
    "missing_in_b": "missing",
}


def ab_sections(report: AbReport) -> list[Section]:
    """The report as sections of the shared report model (:mod:`zluda_runner.report`)."""
    lines = [
        f"Verdict: {report.verdict}",
        f"A: {shlex.join(report.a.argv)}",
        f"B: {shlex.join(report.b.argv)}",
    ]
    lines += [f"problem: {p}" for p in report.problems]
    outputs = Table(
        "outputs",
        [
            Column("name", "name"),
            Column("status", "status"),
            Column("result", "result"),
            Column("dtypes", "dtype A/B"),
            Column("shape", "shape"),
            Column("max_abs", "max abs error", True),
            Column("max_rel", "max rel error", True),
            Column("mismatched", "outside tolerance"),
            Column("argmax", "argmax agreement", True),
            Column("detail", "what differs"),
        ],
        [
            {
                "name": c.name,
                "status": _ROW_STATUS.get(c.status, c.status),
                "result": c.status.replace("_", " "),
                "dtypes": f"{c.dtype_a or '-'}/{c.dtype_b or '-'}",
                "shape": "x".join(map(str, c.shape_a or c.shape_b or [])) or "scalar",
                "max_abs": c.max_abs_error,
                "max_rel": c.max_rel_error,
                "mismatched": f"{c.mismatched}/{c.elements}" if c.elements else None,
                "argmax": c.argmax_agreement,
                "detail": c.detail or None,
            }
            for c in report.outputs
        ],
    )
    stat_columns = [
        Column(f"{side}_{key}", f"{side.upper()} {key} (s)", True)
        for side in ("a", "b")
        for key in ("median", "min", "max")
    ]
    timings = Table(
        "timings",
        [Column("name", "region"), *stat_columns, Column("ratio", "A/B", True), Column("faster", "faster")],
        [
            {
                "name": t.name,
                **_stat_cells("a", t.a),
                **_stat_cells("b", t.b),
                "ratio": t.ratio_a_over_b,
                "faster": t.faster,
            }
            for t in report.timings
        ],
        status_key=None,
    )
    runs = Table(
        "runs (in the order they ran)",
        [
            Column("run", "run"),
            Column("status", "status"),
            Column("wall", "wall (s)", True),
            Column("outputs", "outputs recorded", True),
            Column("error", "error"),
        ],
        [
            {
                "run": f"{r.side}{r.index}",
                "status": "ok" if r.error is None else "failed",
                "wall": r.wall_s,
                "outputs": len(r.outputs),
                "error": r.error,
            }
            for r in report.runs
        ],
    )
    return [Section("A/B comparison", lines, [outputs, timings, runs])]


def render_html(report: AbReport) -> str:
    """A self-contained page, drawn by the project's shared report renderer."""
    return report_html("zluda-run ab", ab_sections(report))


def _stat_cells(side: str, stats: TimingStats | None) -> dict[str, float | None]:
    return {
        f"{side}_median": stats.median_s if stats else None,
        f"{side}_min": stats.min_s if stats else None,
        f"{side}_max": stats.max_s if stats else None,
    }

