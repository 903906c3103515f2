"""The one terminal renderer: tables, colour and summaries through rich.

Colour only on a terminal and never when ``NO_COLOR`` is set; piped output is
plain text without escape codes. Terminal views summarise (the first rows, counts)
and point to ``--json``/``--html`` for everything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from zluda_runner.core.textio import raw, visible
from zluda_runner.report.table import STATUS_CLASSES, Section, Table, cell_text

STYLE_OF_CLASS = {"ok": "green", "bad": "bold red", "warn": "yellow", "muted": "dim"}
DEFAULT_LIMIT = 20
PIPED_WIDTH = 250  # piped output keeps a row on one line, for grep


def make_console(*, stderr: bool = False) -> Console:
    """A console that follows the terminal: colour on a TTY unless ``NO_COLOR``; plain when piped."""
    stream = sys.stderr if stderr else sys.stdout
    piped = not (hasattr(stream, "isatty") and stream.isatty())
    columns = os.environ.get("COLUMNS", "")
    return Console(
        file=raw(stream),  # rich writes its colours itself: its text is made visible() first, here
        width=(int(columns) if columns.isdigit() else PIPED_WIDTH) if piped else None,
        no_color=bool(os.environ.get("NO_COLOR")),
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )


def status_style(status: str) -> str:
    return STYLE_OF_CLASS.get(STATUS_CLASSES.get(status.lower(), ""), "")


def status_text(status: str) -> Text:
    return Text(status, style=status_style(status))


def grid(
    header: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    status_column: int | None = None,
    numeric: Sequence[int] = (),
) -> RichTable:
    """A compact table: ``status_column`` is coloured by status, ``numeric`` columns right-aligned."""
    table = RichTable(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                      title_justify="left", title_style="bold")
    for i, name in enumerate(header):
        table.add_column(name, justify="right" if i in numeric else "left", overflow="fold")
    for row in rows:
        cells: list[Text | str] = [visible(cell_text(c)) for c in row]
        if status_column is not None:
            cells[status_column] = status_text(visible(str(row[status_column])))
        table.add_row(*cells)
    return table


def table_renderable(table: Table, *, limit: int | None = DEFAULT_LIMIT) -> RichTable:
    """A :class:`~zluda_runner.report.table.Table` as a rich table of at most ``limit`` rows."""
    keys = [c.key for c in table.columns]
    status_col = keys.index(table.status_key) if table.status_key in keys else None
    rows = table.rows if limit is None else table.rows[:limit]
    return grid(
        [c.label for c in table.columns],
        ([row.get(k) for k in keys] for row in rows),
        title=table.title or None,
        status_column=status_col,
        numeric=[i for i, c in enumerate(table.columns) if c.numeric],
    )


def print_sections(
    sections: Sequence[Section],
    *,
    limit: int | None = DEFAULT_LIMIT,
    more: str = "see --json or --html for every row",
    console: Console | None = None,
) -> None:
    """Print report sections: summary lines, then each table (first ``limit`` rows)."""
    out = console or make_console()
    for section in sections:
        out.print(Text(section.heading, style="bold"))
        for line in section.lines:
            out.print(Text(visible(line), style="yellow" if line.startswith("warning:") else ""))
        for table in section.tables:
            if table.note:
                out.print(Text(table.note, style="dim"))
            if not table.rows:
                out.print(Text(f"{table.title}: none", style="dim"))
                continue
            out.print(table_renderable(table, limit=limit))
            if limit is not None and len(table.rows) > limit:
                out.print(Text(f"… {len(table.rows) - limit} more rows ({more})", style="dim"))
        out.print()
