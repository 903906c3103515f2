"""Probe reports (driver cases, torch ops) as report sections: Markdown and self-contained HTML."""

from __future__ import annotations

from collections.abc import Sequence

from zluda_runner.probe.bindings import CallRecord
from zluda_runner.probe.model import KIND_TORCH, CaseResult, ProbeReport
from zluda_runner.report.html import render_html
from zluda_runner.report.table import Column, Section, Table


def _calls_text(calls: Sequence[CallRecord]) -> str:
    return "; ".join(f"{c.function} -> {c.result_name or c.result}" for c in calls)


_COUNTED = ("pass", "fail", "missing", "crashed", "timeout", "skipped", "mismatch", "error", "unsupported")


def _count_rows(report: ProbeReport, key: str) -> list[dict[str, object]]:
    """Per area (driver) or op family (torch): how many cases ended in each status."""
    groups: dict[str, dict[str, object]] = {}
    for c in report.cases:
        group = getattr(c, key) or "-"
        row = groups.setdefault(group, {key: group, "total": 0})
        row[c.status] = int(row.get(c.status, 0)) + 1  # type: ignore[call-overload]
        row["total"] = int(row["total"]) + 1  # type: ignore[call-overload]
    return list(groups.values())


def _failing_call(case: CaseResult) -> str:
    """The call that decided a case's fate: the last one that did not return CUDA_SUCCESS."""
    for call in reversed(case.calls):
        if call.result != 0:
            return f"{call.function} -> {call.result_name or call.result}"
    return ""


def _driver_tables(report: ProbeReport) -> list[Table]:
    present = [s for s in _COUNTED if any(c.status == s for c in report.cases)]
    by_area = Table(
        "by area",
        [Column("area", "area"), Column("total", "cases", True)] + [Column(s, s, True) for s in present],
        _count_rows(report, "area"),
        status_key=None,
    )
    problems, rows = [], []
    for c in report.cases:
        row = c.to_dict()
        row["result"] = f"{c.result_code} {c.result_name}" if c.result_code is not None else (c.signal or "")
        row["calls"] = _calls_text(c.calls)
        row["failing_call"] = _failing_call(c) if c.status != "pass" else ""
        rows.append(row)
        if c.status not in ("pass", "skipped"):
            problems.append(row)
    columns = [
        Column("id", "case"),
        Column("area", "area"),
        Column("status", "status"),
        Column("failing_call", "failing call"),
        Column("detail", "detail"),
    ]
    return [
        by_area,
        Table("problems (fail / missing / crashed / timeout)", columns, problems),
        Table(
            "cases", [*columns[:4], Column("result", "result"), columns[4], Column("calls", "calls")], rows
        ),
    ]


def _torch_tables(report: ProbeReport) -> list[Table]:
    present = [s for s in _COUNTED if any(c.status == s for c in report.cases)]
    by_family = Table(
        "by op family",
        [Column("area", "family"), Column("total", "ops x dtypes", True)]
        + [Column(s, s, True) for s in present],
        _count_rows(report, "area"),
        status_key=None,
    )
    ops = Table(
        "ops",
        [
            Column("op", "op"),
            Column("area", "family"),
            Column("dtype", "dtype"),
            Column("status", "status"),
            Column("max_abs_err", "max abs err", True),
            Column("max_rel_err", "max rel err", True),
            Column("detail", "detail"),
        ],
        [{**c.to_dict(), "op": c.title.split(" (")[0], "dtype": c.dtype} for c in report.cases],
        group_key="area",
    )
    return [by_family, ops]


def probe_sections(report: ProbeReport) -> list[Section]:
    lines = [f"target: {report.target}"]
    if report.load is not None and report.load.status != "pass":
        lines.append(f"load: {report.load.status}: {report.load.detail}")
    lines += [f"{k}: {v}" for k, v in report.environment.items()]
    if report.summary:
        lines.append("summary: " + ", ".join(f"{n} {s}" for s, n in report.summary.items()))
    if report.kind != KIND_TORCH:
        called = {c.function for case in report.cases for c in case.calls}
        lines.append(f"{len(called)} distinct driver functions called")
    lines.append(f"took {report.duration_s:.1f} s")
    lines += [f"warning: {w}" for w in report.warnings]
    tables = _torch_tables(report) if report.kind == KIND_TORCH else _driver_tables(report)
    cov = report.coverage
    if cov is not None:
        if cov.error:
            lines.append(f"symbol coverage: {cov.error}")
        else:
            lines.append(
                f"symbol coverage: {cov.present} of {cov.reference} reference driver symbols exported "
                f"({cov.percent:.0f}%), {len(cov.extra)} exports not in the reference"
            )
            tables.append(
                Table(
                    "reference symbols not exported",
                    [Column("symbol", "symbol")],
                    [{"symbol": s} for s in cov.missing],
                    status_key=None,
                )
            )
    title = "Torch-level probe" if report.kind == KIND_TORCH else "Driver API probe"
    return [Section(title, lines, tables)]



def probe_html(report: ProbeReport) -> str:
    return render_html("zluda-runner probe", probe_sections(report))


