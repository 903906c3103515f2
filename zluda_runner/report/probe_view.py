"""The terminal view of a probe: counts, the failing cases first, and where the whole report is."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from zluda_runner.probe.model import UNAVAILABLE, CaseResult, ProbeReport
from zluda_runner.report.probe_sections import probe_html, probe_sections
from zluda_runner.report.terminal import make_console, print_sections, status_style

TERMINAL_ROWS = 25
__all__ = ["print_probe", "probe_html", "progress_line"]


def progress_line(result: CaseResult) -> None:
    """One line per finished case on stderr, while the probe runs."""
    click.echo(f"  {result.status:8} {result.id}", err=True)


def print_probe(report: ProbeReport, *, html: Path | None = None, console: Console | None = None) -> None:
    out = console or make_console()
    more = f"every row: {html}" if html else "every row: --json or --html FILE"
    print_sections(probe_sections(report), limit=TERMINAL_ROWS, more=more, console=out)
    if report.summary:
        line = Text("summary: ")
        for status, count in report.summary.items():
            line.append(f"{count} {status}  ", style=status_style(status))
        out.print(line)
    if html:
        out.print(f"HTML report written to {html}")
    if report.load is not None and report.load.status == UNAVAILABLE and "OpInfo" in report.load.detail:
        hint = "hint: pip install numpy expecttest in that interpreter, or use --quick"
        out.print(Text(hint, style="yellow"))
