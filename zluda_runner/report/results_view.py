"""Terminal views of the results store: a run per line, one run in full, a diff, the matrix.

Everything in a run may come from someone else's bundle: each line goes through
:func:`~zluda_runner.core.textio.visible` before it is printed, so escape sequences, ``\\r``
and other control characters show as ``\\xNN`` instead of acting on the terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zluda_runner.core.textfit import Col, fit_table, view_width, wrap_words
from zluda_runner.core.textio import visible

if TYPE_CHECKING:  # only read here: a command that lists runs does not import the diff or the matrix
    from zluda_runner.results.matrix import Matrix
    from zluda_runner.results.queries import RunDiff
    from zluda_runner.results.schema import RunRecord

RUN_HEADER = ("run", "started (UTC)", "kind", "release", "gfx", "torch")
RUN_WIDTHS = (12, 19, 11, 18, 9, 14)  # the columns of run_line, the result after them


def run_header() -> str:
    """The header row of :func:`run_line`'s columns."""
    return "  ".join(h.ljust(w) for h, w in zip(RUN_HEADER, RUN_WIDTHS, strict=True)) + "  result"


def run_line(run: RunRecord) -> str:
    s = run.summary
    total = s.get("total")
    counts = f"{s.get('passed', 0)}/{total} passing" if total else f"{s.get('items', 0)} items"
    if run.kind == "ab" and s.get("verdict"):
        counts = str(s["verdict"])
    cells = (run.run_id[:12], run.started_at[:19].replace("T", " "), run.kind, run.release_id, run.gfx,
             run.torch_build)
    return "  ".join(c.ljust(w) for c, w in zip(cells, RUN_WIDTHS, strict=True)) + "  " + counts


def _lines(lines: list[str]) -> str:
    return "\n".join(visible(line) for line in lines)


def render_runs(runs: list[RunRecord], location: str) -> str:
    return _lines([run_header(), *(run_line(r) for r in runs)]) if runs else visible(
        f"no runs recorded in {location}")


def render_run(run: RunRecord) -> str:
    lines = [run_line(run), "host: " + ", ".join(f"{k}={v}" for k, v in sorted(run.host.items()))]
    for label, data in (("release", run.release), ("target", run.target)):
        if data:
            lines.append(f"{label}: " + ", ".join(f"{k}={v}" for k, v in sorted(data.items())))
    lines.append("command: " + " ".join(run.command))
    for item in run.items:
        mark = {True: "ok  ", False: "FAIL", None: "    "}[item.ok]
        numbers = " ".join(f"{k}={v:.4g}" for k, v in sorted(item.numbers.items()) if v is not None)
        lines.append(f"  {mark} {item.item:40} {item.status:10} {item.detail} {numbers}".rstrip())
    return _lines(lines)


def render_diff(a: RunRecord, b: RunRecord, diff: RunDiff) -> str:
    lines = [f"{a.run_id[:12]} ({a.kind}, {a.started_at[:10]}) -> "
             f"{b.run_id[:12]} ({b.kind}, {b.started_at[:10]})"]
    groups = (("newly failing", diff.newly_failing), ("fixed", diff.fixed), ("status changed", diff.changed),
              ("only in B", diff.added), ("only in A", diff.removed))
    for title, changes in groups:
        if changes:
            lines.append(f"{title} ({len(changes)}):")
            lines += [f"  {c.item}: {c.before or '-'} -> {c.after or '-'} {c.detail}".rstrip()
                      for c in changes]
    lines += [f"speed: {s.item} side {s.side}: {s.before_s:.4g} s -> {s.after_s:.4g} s ({s.change:+.0%})"
              for s in diff.speed]
    if len(lines) == 1:
        lines.append("no changes")
    return _lines(lines)


#: release, GPU target and torch build are names, never broken
MATRIX_COLUMNS = [Col("release", wrap=False, head=True), Col("gfx", wrap=False, head=True),
                  Col("torch", wrap=False, head=True), Col("probe"), Col("torch ops"), Col("A/B"),
                  Col("runs", right=True)]


def render_matrix(matrix: Matrix, width: int | None = None) -> str:
    """The terminal summary: one line per cell, then the first failing items, wrapped at whole names
    to ``width`` (default: COLUMNS or the terminal's; unwrapped when piped)."""
    width = width if width is not None else view_width()
    if not matrix.cells:
        return "no runs recorded yet (zluda-run probe / ab / doctor record them)"
    rows = [[c.release, c.gfx, c.torch, c.probe.text() if c.probe else "-",
             c.torch_ops.text() if c.torch_ops else "-", c.ab or "-", str(c.runs)] for c in matrix.cells]
    lines = fit_table(MATRIX_COLUMNS, rows, width)
    shown = [c for c in matrix.cells if c.failing]
    if shown:
        lines.append("")
        lines.append("failing (latest run of each kind):")
        for c in shown:
            names = ", ".join(f.item for f in c.failing[:6]) + (" …" if len(c.failing) > 6 else "")
            lines += wrap_words(names, width, first=f"  {c.release} / {c.gfx} / {c.torch}: ", rest="      ")
    if matrix.locks:
        lines += ["", "known-good locks (zluda-run find; reuse one with --lock FILE or find --from):"]
        for k in matrix.locks:
            proven = "proven on the GPU" if k.proven_on_gpu else "not proven on the GPU"
            lines += wrap_words(f"{k.release} [{k.variant}], {proven}, run {k.run_id[:12]} "
                                f"({k.when[:10]})", width, first=f"  {k.gfx} / {k.torch}: ", rest="      ")
    lines.append("")
    lines.append(
        f"{matrix.runs} runs; {len(matrix.releases)} releases x {len(matrix.gfx_targets)} GPU targets x "
        f"{len(matrix.torch_builds)} torch builds"
    )
    return _lines(lines)
