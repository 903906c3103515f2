"""Markdown views for the terminal."""

from __future__ import annotations

from zluda_runner.report.table import Section, Table, cell_text


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table_markdown(table: Table, *, limit: int | None = None) -> str:
    lines = [f"### {table.title}", ""] if table.title else []
    if table.note:
        lines += [table.note, ""]
    if not table.rows:
        return "\n".join([*lines, "(none)", ""])
    lines.append("| " + " | ".join(c.label for c in table.columns) + " |")
    lines.append("|" + "|".join("---:" if c.numeric else "---" for c in table.columns) + "|")
    rows = table.rows if limit is None else table.rows[:limit]
    for row in rows:
        lines.append("| " + " | ".join(_escape(cell_text(row.get(c.key))) for c in table.columns) + " |")
    if limit is not None and len(table.rows) > limit:
        lines.append(f"\n… {len(table.rows) - limit} more rows (see --json or --html)")
    return "\n".join(lines) + "\n"


def render_markdown(sections: list[Section], *, limit: int | None = None) -> str:
    out = []
    for section in sections:
        out.append(f"## {section.heading}\n")
        out += [f"{line}  " for line in section.lines]
        if section.lines:
            out.append("")
        out += [table_markdown(t, limit=limit) for t in section.tables]
    return "\n".join(out).rstrip() + "\n"
