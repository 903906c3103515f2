"""The verdict as one self-contained HTML page: the verdict table, plots of GPU utilisation and VRAM
over time (one line per run, inline SVG), the runs, and the outputs compared."""

from __future__ import annotations

import shlex

from zluda_runner.poc.model import PocReport, PocRun
from zluda_runner.report.html import Figure, render_html
from zluda_runner.report.svgplot import Plot, Series, render_svg
from zluda_runner.report.table import Column, Section, Table

GIB = 1024**3


def run_label(run: PocRun, runs: int) -> str:
    return f"run {run.index}" + (" (compiles)" if run.index == 1 and runs > 1 else "")


def plots(report: PocReport) -> tuple[Plot, ...]:
    """Busy % and VRAM (and power, when read) over time, one series per run."""
    traced = [r for r in report.runs if r.trace is not None]
    n = len(report.runs)

    def series(pick: str, scale: float = 1.0) -> tuple[Series, ...]:
        out = []
        for run in traced:
            assert run.trace is not None
            points = tuple((s.t, float(v) / scale) for s in run.trace.samples
                           if (v := getattr(s, pick)) is not None)
            out.append(Series(run_label(run, n), points))
        return tuple(out)

    found = [
        Plot("GPU utilisation", "time since the run started (s)", "busy (%)", series("busy_percent"),
             y_min=0.0, y_max=100.0),
        Plot("VRAM used", "time since the run started (s)", "VRAM used (GiB)", series("vram_used", GIB),
             y_min=0.0, marks=_vram_total_mark(report)),
    ]
    power = series("power_w")
    if any(s.points for s in power):
        found.append(Plot("GPU power", "time since the run started (s)", "power (W)", power, y_min=0.0))
    return tuple(found)


def _vram_total_mark(report: PocReport) -> tuple[tuple[float, str], ...]:
    totals = [r.trace.vram_total for r in report.runs if r.trace is not None and r.trace.vram_total]
    return ((max(totals) / GIB, f"total {max(totals) / GIB:.3g} GiB"),) if totals else ()


def poc_sections(report: PocReport) -> list[Section | Figure]:
    ran_under = "natively (no ZLUDA)" if report.mode == "native" else (
        f"through ZLUDA{f' ({report.release})' if report.release else ''}")
    lines = [
        f"Verdict: {report.verdict.upper()} -- {report.summary}",
        f"Workload: {shlex.join(report.command)}, {len(report.runs)} runs {ran_under}",
        f"Reference: {report.reference}",
        f"GPU telemetry: {report.telemetry}",
    ]
    verdict = Table(
        "criteria",
        [Column("criterion", "criterion"), Column("status", "status"), Column("summary", "result"),
         Column("evidence", "evidence")],
        [{"criterion": c.name, "status": c.status, "summary": c.summary, "evidence": " | ".join(c.evidence)}
         for c in report.criteria],
    )
    out: list[Section | Figure] = [Section("Does it really run?", lines, [verdict])]
    for i, plot in enumerate(plots(report)):
        caption = ("no GPU telemetry: " + report.telemetry) if not any(s.points for s in plot.series) else ""
        out.append(Figure(render_svg(plot), caption, heading="GPU over time" if i == 0 else ""))
    out.append(Section("Runs", [], [_runs_table(report), _outputs_table(report)]))
    return out


def _runs_table(report: PocReport) -> Table:
    n = len(report.runs)
    rows = []
    for run in (*report.runs, *report.reference_runs):
        g = run.gpu
        rows.append({
            "run": "reference" if run.side == "reference" else run_label(run, n),
            "status": "ok" if run.ok else "failed",
            "wall": run.wall_s,
            "regions": ", ".join(f"{t.name} {min(t.seconds):.4g} s" for t in run.timings if t.seconds),
            "busy": g.busy_peak if g else None,
            "vram_peak": g.vram_peak / GIB if g and g.vram_peak is not None else None,
            "vram_after": (run.trace.vram_after / GIB
                           if run.trace is not None and run.trace.vram_after is not None else None),
            "error": run.error,
        })
    return Table("runs", [
        Column("run", "run"), Column("status", "status"), Column("wall", "wall (s)", True),
        Column("regions", "ab.timer regions"), Column("busy", "busy peak (%)", True),
        Column("vram_peak", "VRAM peak (GiB)", True), Column("vram_after", "VRAM after (GiB)", True),
        Column("error", "error"),
    ], rows)


def _outputs_table(report: PocReport) -> Table:
    rows = []
    for run in report.runs:
        for c in run.comparisons:
            rows.append({
                "run": run.index, "name": c.name, "status": "ok" if c.status == "agree" else "mismatch",
                "result": c.status.replace("_", " "), "dtypes": f"{c.dtype_a or '-'}/{c.dtype_b or '-'}",
                "max_abs": c.max_abs_error, "outside": f"{c.mismatched}/{c.elements}" if c.elements else None,
                "argmax": c.argmax_agreement,
            })
    return Table("outputs against the reference", [
        Column("run", "run", True), Column("name", "output"), Column("status", "status"),
        Column("result", "result"), Column("dtypes", "dtype (ours/reference)"),
        Column("max_abs", "max abs error", True), Column("outside", "outside tolerance"),
        Column("argmax", "argmax agreement", True),
    ], rows)


def render_poc_html(report: PocReport) -> str:
    return render_html("zluda-run poc", poc_sections(report))

