"""The verdict on the terminal: one line per criterion (pass/fail), its evidence under it,
then the overall verdict and where the plots are."""

from __future__ import annotations

import shlex
from pathlib import Path

from zluda_runner.poc.model import PocReport
from zluda_runner.report.terminal import say

EVIDENCE_LINES = 8  # per criterion; --json / --html have all of it


def render_lines(report: PocReport) -> list[str]:
    """The lines the terminal shows, testable without a terminal."""
    under = "natively" if report.mode == "native" else "through ZLUDA" + (
        f" ({report.release})" if report.release else "")
    lines = [f"zluda-run poc: {shlex.join(report.command)}",
             f"{len(report.runs)} runs {under}; reference: {report.reference}",
             f"GPU telemetry: {report.telemetry}", ""]
    for c in report.criteria:
        lines.append(f"[{'PASS' if c.passed else 'FAIL'}] {c.name}: {c.summary}")
        shown = c.evidence[:EVIDENCE_LINES]
        lines += [f"       {e}" for e in shown]
        if len(c.evidence) > len(shown):
            lines.append(f"       ... {len(c.evidence) - len(shown)} more (--json / --html)")
    return [*lines, "", f"verdict: {report.verdict.upper()} -- {report.summary}"]


def print_poc(report: PocReport, *, html: Path | None = None) -> None:
    say([*render_lines(report), f"HTML report with plots written to {html}" if html else
         "plots of utilisation and VRAM per run: --html FILE"])
