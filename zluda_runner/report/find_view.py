"""A search on the terminal: one line per candidate tried (its verdict and why), the lock written."""

from __future__ import annotations

import shlex

from zluda_runner.finder.model import FindReport
from zluda_runner.report.terminal import say

_MARK = {"pass": "PASS", "unproven": "PASS*", "fail": "FAIL"}


def render_lines(report: FindReport) -> list[str]:
    """The lines the terminal shows, testable without a terminal."""
    lines = [f"zluda-run find: {shlex.join(report.command)}",
             f"{report.runs} run(s) per candidate; reference: {report.reference}",
             f"GPU telemetry: {report.telemetry}", ""]
    for v in report.verdicts:
        stage = "" if v.stage == "run" else " (plan: nothing ran)"
        lines.append(f"[{_MARK[v.status]}] {v.candidate.label}{stage}: {v.why}")
    if any(v.status == "unproven" for v in report.verdicts):
        lines.append("  * every criterion judged here passed; on the GPU not shown (no GPU telemetry)")
    stopped = {"passed": "stopped at the first that works", "exhausted": "every candidate tried",
               "budget": f"the budget ran out; {report.left} not tried",
               "interrupted": f"interrupted; {report.left} not tried"}[report.stopped]
    lines += ["", f"{stopped}: {report.summary}"]
    if report.lock is not None:
        where = f"written to {report.lock_path}" if report.lock_path else "not written"
        lines.append(f"lock: {where}" + ("" if report.lock.proven_on_gpu else " (not proven on the GPU)"))
        host = report.lock.host
        hip = f"{host.hip_from}" if host.hip_from else "no HIP found"
        lines.append(f"  variant: {report.lock.variant}; HIP: {hip}")
    return lines


def print_find(report: FindReport) -> None:
    say(render_lines(report))
