"""The verdict on the terminal: one line per criterion (pass/fail, coloured), its evidence under it,
then the overall verdict and where the plots are."""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.console import Console
from rich.text import Text

from zluda_runner.core.textio import visible
from zluda_runner.poc.model import PocReport
from zluda_runner.report.terminal import make_console

EVIDENCE_LINES = 8  # per criterion; --json / --html have all of it


def render_lines(report: PocReport) -> list[tuple[str, str]]:
    """(text, style) lines: what the terminal shows, testable without a console."""
    under = "natively" if report.mode == "native" else "through ZLUDA" + (
        f" ({report.release})" if report.release else "")
    lines: list[tuple[str, str]] = [
        (f"zluda-run poc: {shlex.join(report.command)}", "bold"),
        (f"{len(report.runs)} runs {under}; reference: {report.reference}", ""),
        (f"GPU telemetry: {report.telemetry}", "dim"),
        ("", ""),
    ]
    for c in report.criteria:
        mark = "PASS" if c.passed else "FAIL"
        lines.append((f"[{mark}] {c.name}: {c.summary}", "green" if c.passed else "bold red"))
        shown = c.evidence[:EVIDENCE_LINES]
        lines += [(f"       {e}", "dim") for e in shown]
        if len(c.evidence) > len(shown):
            lines.append((f"       ... {len(c.evidence) - len(shown)} more (--json / --html)", "dim"))
    lines += [("", ""), (f"verdict: {report.verdict.upper()} -- {report.summary}",
                         "bold green" if report.ok else "bold red")]
    return lines


def print_poc(report: PocReport, *, html: Path | None = None, console: Console | None = None) -> None:
    out = console or make_console()
    for text, style in render_lines(report):
        out.print(Text(visible(text), style=style))
    out.print(f"HTML report with plots written to {html}" if html else
              "plots of utilisation and VRAM per run: --html FILE")


def render_text(report: PocReport) -> str:
    return "\n".join(text for text, _ in render_lines(report))
