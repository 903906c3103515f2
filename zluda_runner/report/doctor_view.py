"""The doctor's report as text: one line per check, its fix under it, then the totals."""

from __future__ import annotations

from zluda_runner.core.textfit import view_width, wrap_line
from zluda_runner.doctor.model import DoctorReport, Status

_MARK = {Status.OK: "ok  ", Status.WARN: "WARN", Status.FAIL: "FAIL", Status.NOT_APPLICABLE: "n/a "}


def render_text(report: DoctorReport, width: int | None = -1) -> str:
    """The report; each line wrapped at spaces to ``width`` (default: the terminal's; ``None``: not)."""
    lines = [
        f"zluda-run doctor ({report.facts.os} {report.facts.arch}"
        + (f", root {report.facts.root}" if report.facts.root else "")
        + ")"
    ]
    for check in report.checks:
        lines.append(f"[{_MARK[check.status]}] {check.id}: {check.message}")
        if check.fix and check.status in (Status.WARN, Status.FAIL):
            lines.append(f"       fix: {check.fix}")
    if report.skipped:
        lines.append(f"skipped: {', '.join(report.skipped)}")
    not_applicable = report.count(Status.NOT_APPLICABLE)
    lines.append(
        f"{report.count(Status.OK)} ok, {report.count(Status.WARN)} warning(s), "
        f"{report.count(Status.FAIL)} failure(s)"
        + (f", {not_applicable} not applicable" if not_applicable else "")
        + f"; exit code {report.exit_code}"
    )
    fit = view_width() if width == -1 else width
    return "\n".join(part for line in lines for part in wrap_line(line, fit, hang=7))
