"""The terminal summary of a trace: the failing calls first, counts, and where the whole report is."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.report.terminal import page_written, print_sections, say
from zluda_runner.report.trace_sections import trace_sections
from zluda_runner.trace.model import TraceReport

TERMINAL_ROWS = 15


def ended_line(ended_by: str, exit_code: int | None) -> str:
    """The line that says what killed the command (``ended_by``: core.proctree.ended_by's name)."""
    shown = f", exit {exit_code}" if exit_code is not None else ""
    return f"the command was killed by {ended_by}{shown}"


def print_trace_summary(report: TraceReport, *, saved_to: Path | None = None, err: bool = True,
                        html: Path | None = None) -> None:
    """On stderr (the workload owns stdout) unless not ``err``: the sections, each table cut to its
    first rows; ``html``: the page written (``trace-report --html``), said where, as probe and poc do."""
    more = f"every row: {html}" if html else f"the whole report: {saved_to}" if saved_to else \
        "see --json or --html"
    print_sections(trace_sections(report), limit=TERMINAL_ROWS, more=more, err=err)
    lines = [ended_line(report.ended_by, report.exit_code)] if report.ended_by else []
    if saved_to is not None:
        lines += [f"trace report: {saved_to}"]
    if html is not None:
        lines += [page_written(html)]
    elif saved_to is not None:
        lines += [f"HTML: zluda-run trace-report {saved_to} --html trace.html"]
    say(lines, err=err)
