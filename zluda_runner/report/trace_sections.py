"""Trace reports as report sections: Markdown and self-contained HTML."""

from __future__ import annotations

from zluda_runner.report.html import render_html
from zluda_runner.report.table import Column, Section, Table
from zluda_runner.trace.model import TraceReport


def trace_sections(report: TraceReport) -> list[Section]:
    lines = [
        f"source: {report.source}",
        f"command: {' '.join(report.command)}",
        f"exit code: {report.exit_code if report.exit_code is not None else 'not recorded (raw logs)'}"
        + (f" (killed by {report.ended_by})" if report.ended_by else ""),
        f"{len(report.processes)} process(es), {report.total_calls} calls, "
        f"{len(report.proc_address_lookups)} distinct cuGetProcAddress lookups, "
        f"{len(report.export_tables)} export-table requests",
    ]
    notes = sum(p.message_count for p in report.processes)
    unknown = sum(p.unknown_count for p in report.processes)
    if notes or unknown:
        lines.append(f"{notes} tracer note(s), {unknown} line(s) of no known shape (listed below)")
    lines += [f"warning: {w}" for w in report.warnings]
    call_rows = []
    for c in report.calls:
        failed = c.failures
        call_rows.append(
            {
                "function": c.function,
                "count": c.count,
                "failed": failed,
                "status": "missing" if c.missing_in_driver else ("fail" if failed else "pass"),
                "results": c.results,
                "first_failure": (
                    f"{c.first_failure.result} at call {c.first_failure.call_number}"
                    if c.first_failure
                    else ""
                ),
            }
        )
    lookups = [
        {
            "symbol": x.symbol,
            "version": x.version,
            "flags": x.flags,
            "count": x.count,
            "status": "pass" if x.found else "missing",
        }
        for x in report.proc_address_lookups
    ]
    tables = [
        Table(
            "calls",
            [
                Column("function", "function"),
                Column("count", "count", True),
                Column("failed", "failed", True),
                Column("status", "status"),
                Column("results", "results"),
                Column("first_failure", "first failure"),
            ],
            call_rows,
        ),
        Table(
            "cuGetProcAddress lookups",
            [
                Column("symbol", "symbol"),
                Column("version", "version", True),
                Column("flags", "flags", True),
                Column("count", "count", True),
                Column("status", "found"),
            ],
            lookups,
        ),
        Table(
            "cuGetExportTable requests",
            [Column("guid", "GUID"), Column("count", "count", True), Column("status", "found")],
            [
                {"guid": t.guid, "count": t.count, "status": "pass" if t.found else "missing"}
                for t in report.export_tables
            ],
        ),
        Table(
            "processes",
            [
                Column("process", "process"),
                Column("pid", "pid", True),
                Column("ppid", "ppid", True),
                Column("argv", "argv"),
                Column("calls", "calls", True),
                Column("status", "complete"),
            ],
            [
                {
                    "process": p.label,
                    "pid": p.pid,
                    "ppid": p.ppid,
                    "argv": " ".join(p.argv),
                    "calls": sum(c.count for c in p.calls),
                    "status": "pass" if p.complete else "fail",
                }
                for p in report.processes
            ],
        ),
    ]
    extra = [
        {"process": p.label, "kind": kind, "text": text}
        for p in report.processes
        for kind, texts in (("unknown", p.unknown_lines), ("note", p.messages))
        for text in texts
    ]
    if extra:
        tables.append(
            Table(
                "tracer notes and unrecognised lines",
                [Column("process", "process"), Column("kind", "kind"), Column("text", "text")],
                extra,
                status_key=None,
            )
        )
    return [Section("Driver call trace", lines, tables)]

def trace_html(report: TraceReport) -> str:
    return render_html("zluda-runner trace", trace_sections(report))
