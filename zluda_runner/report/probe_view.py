"""The terminal view of a probe: counts, the failing cases first, and where the whole report is."""

from __future__ import annotations

from pathlib import Path

import click

from zluda_runner.probe.model import UNAVAILABLE, CaseResult, ProbeReport
from zluda_runner.report.probe_sections import probe_html, probe_sections
from zluda_runner.report.terminal import page_written, print_sections, say

TERMINAL_ROWS = 25
__all__ = ["print_probe", "probe_html", "progress_line"]


def progress_line(result: CaseResult) -> None:
    """One line per finished case on stderr, while the probe runs."""
    click.echo(f"  {result.status:8} {result.id}", err=True)


def print_probe(report: ProbeReport, *, html: Path | None = None) -> None:
    more = f"every row: {html}" if html else "every row: --json or --html FILE"
    print_sections(probe_sections(report), limit=TERMINAL_ROWS, more=more)
    lines = ["summary: " + "  ".join(f"{n} {s}" for s, n in report.summary.items())] if report.summary else []
    lines += [page_written(html)] if html else []
    if report.load is not None and report.load.status == UNAVAILABLE and "OpInfo" in report.load.detail:
        lines.append("hint: pip install numpy expecttest in that interpreter, or use --quick")
    say(lines)
