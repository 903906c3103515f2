"""The matrix as one self-contained HTML page, drawn by the shared report renderer
(:mod:`zluda_runner.report.html`: no network, sort by any column, filter by text, by a status, or
by the link: ``matrix.html#filter=gfx1100``). A cell with failing items is ``fail``; they are
listed in its row."""

from __future__ import annotations

from zluda_runner.report.html import render_html as page_html
from zluda_runner.report.table import Column, Section, Table
from zluda_runner.results.matrix import Cell, Matrix

COLUMNS = [Column("release", "release"), Column("gfx", "GPU target"), Column("torch", "torch build"),
           Column("probe", "probe cases"), Column("torch_ops", "torch ops"), Column("ab", "A/B"),
           Column("runs", "runs", True), Column("last", "last run"), Column("status", "failing"),
           Column("failing", "failing items")]

LOCK_COLUMNS = [Column("gfx", "GPU target"), Column("torch", "torch build"), Column("release", "release"),
                Column("variant", "settings"), Column("status", "status"), Column("proven", "proven"),
                Column("run", "find run"), Column("when", "when")]


def _row(c: Cell) -> dict[str, object]:
    items = "; ".join(f"{f.kind} {f.item}: {f.status}" + (f" ({f.detail[:200]})" if f.detail else "")
                      for f in c.failing)
    return {"release": c.release, "gfx": c.gfx, "torch": c.torch,
            "probe": c.probe.text() if c.probe else "-",
            "torch_ops": c.torch_ops.text() if c.torch_ops else "-",
            "ab": c.ab or "-", "runs": c.runs, "last": c.last[:16].replace("T", " "),
            "status": "fail" if c.failing else "ok",
            "failing": f"{len(c.failing)} failing: {items}" if c.failing else "none"}


def render_html(matrix: Matrix, title: str = "ZLUDA compatibility matrix") -> str:
    meta = (f"{matrix.runs} runs; {len(matrix.releases)} releases x {len(matrix.gfx_targets)} GPU targets x "
            f"{len(matrix.torch_builds)} torch builds; each cell: the latest run of each kind")
    table = Table("", COLUMNS, [_row(c) for c in matrix.cells])
    sections = [Section("releases x GPU targets x torch builds", [meta], [table])]
    if matrix.locks:
        rows = [{"gfx": k.gfx, "torch": k.torch, "release": k.release, "variant": k.variant,
                 "status": "ok" if k.proven_on_gpu else "warn",
                 "proven": "proven on the GPU" if k.proven_on_gpu else "not proven on the GPU",
                 "run": k.run_id[:12], "when": k.when[:16].replace("T", " ")} for k in matrix.locks]
        sections.append(Section("known-good locks", ["the lock each recorded find kept, per GPU x torch"],
                                [Table("", LOCK_COLUMNS, rows)]))
    return page_html(title, sections)
