"""The doctor's report as text: one line per check, its fix under it, then the totals."""

from __future__ import annotations

from zluda_runner.core.textfit import view_width, wrap_line, wrap_words
from zluda_runner.doctor.model import DoctorReport, Status

_MARK = {Status.OK: "ok  ", Status.WARN: "WARN", Status.FAIL: "FAIL", Status.NOT_APPLICABLE: "n/a "}


def render_text(report: DoctorReport, width: int | None = -1) -> str:
    """The report; each line wrapped at spaces to ``width`` (default: the terminal's; ``None``: not). A
    message or fix of several lines (the nothing-fits verdict and its ways) keeps its line breaks: each
    later line indented under its first, a wrapped line 2 further in."""
    fit = view_width() if width == -1 else width
    lines = [
        f"zluda-run doctor ({report.facts.os} {report.facts.arch}"
        + (f", root {report.facts.root}" if report.facts.root else "")
        + ")"
    ]
    for check in report.checks:
        lines += _block(f"[{_MARK[check.status]}] {check.id}: ", check.message, " " * len(_FIX), fit)
        if check.fix and check.status in (Status.WARN, Status.FAIL):
            lines += _block(_FIX + "fix: ", check.fix, " " * len(_FIX + "fix: "), fit)
    if report.skipped:
        lines += wrap_line(f"skipped: {', '.join(report.skipped)}", fit, hang=len(_FIX))
    not_applicable = report.count(Status.NOT_APPLICABLE)
    lines += wrap_line(
        f"{report.count(Status.OK)} ok, {report.count(Status.WARN)} warning(s), "
        f"{report.count(Status.FAIL)} failure(s)"
        + (f", {not_applicable} not applicable" if not_applicable else "")
        + f"; exit code {report.exit_code}", fit, hang=len(_FIX))
    return "\n".join(lines)


_FIX = " " * 7  # a check's text after its mark: "[FAIL] "


def _block(first: str, text: str, later: str, width: int | None) -> list[str]:
    """``text`` after ``first`` (its wrapped part under the check's text), each later line of it after
    ``later``, wrapped 2 further in."""
    head, *rest = text.split("\n")
    out = wrap_words(head, width, first, _FIX if first.startswith("[") else later + "  ")
    for line in rest:
        out += wrap_words(line.strip(), width, later + "  " * first.startswith("["), later + "    ")
    return out
