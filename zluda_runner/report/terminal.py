"""The terminal renderer of report sections: summary lines and tables, fitted by core.textfit.

Plain text (colour was decoration only): the CLI's sink makes every byte visible. Terminal views
summarise (the first rows, counts) and point to ``--json``/``--html`` for everything.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from zluda_runner.core.textfit import Col, fit_table, view_width, wrap_line

if TYPE_CHECKING:  # a view that prints lines (say) does not import the report tables
    from zluda_runner.report.table import Section, Table

DEFAULT_LIMIT = 20


def say(lines: Sequence[str], *, err: bool = False, hang: int = 2, width: int | None = -1) -> None:
    """``lines`` wrapped to ``width`` (default: that of stdout, stderr with ``err``), each echoed."""
    width = view_width(sys.stderr if err else sys.stdout) if width == -1 else width
    for line in (row for text in lines for row in text.split("\n")):  # a newline keeps its line break
        for part in wrap_line(line, width, hang):
            click.echo(part, err=err)


def page_written(html: object) -> str:
    """The line that says where ``--html`` wrote its page (every command that writes one says it)."""
    return f"HTML report written to {html}"


def table_lines(table: Table, width: int | None, *, limit: int | None = DEFAULT_LIMIT) -> list[str]:
    """A :class:`~zluda_runner.report.table.Table` of at most ``limit`` rows, fitted to ``width``."""
    from zluda_runner.report.table import cell_text

    cols = [Col(c.label, right=c.numeric, head=i == 0) for i, c in enumerate(table.columns)]
    rows = table.rows if limit is None else table.rows[:limit]
    lines = [table.title] if table.title else []
    cells = [[cell_text(row.get(c.key)) for c in table.columns] for row in rows]
    return lines + fit_table(cols, cells, width)


def section_lines(sections: Sequence[Section], width: int | None, *, limit: int | None = DEFAULT_LIMIT,
                  more: str = "see --json or --html for every row") -> list[str]:
    """Report sections: heading, summary lines, then each table (first ``limit`` rows)."""
    out: list[str] = []
    for section in sections:
        out += [section.heading, *section.lines]
        for table in section.tables:
            out += [table.note] if table.note else []
            if not table.rows:
                out.append(f"{table.title}: none")
                continue
            out += table_lines(table, width, limit=limit)
            if limit is not None and len(table.rows) > limit:
                out.append(f"… {len(table.rows) - limit} more rows ({more})")
        out.append("")
    return out


def print_sections(sections: Sequence[Section], *, limit: int | None = DEFAULT_LIMIT,
                   more: str = "see --json or --html for every row", err: bool = False) -> None:
    width = view_width(sys.stderr if err else sys.stdout)
    say(section_lines(sections, width, limit=limit, more=more), err=err, width=width)
