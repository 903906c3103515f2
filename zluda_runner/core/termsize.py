"""The terminal's width as the standard library reads it (``shutil.get_terminal_size().columns``), without
importing :mod:`shutil` (and the archive modules it imports): what ``zluda-run --help`` starts with; and the
width a view fits (:func:`view_width`), which a remembered command's identity holds."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from typing import TextIO

FALLBACK_COLUMNS = 80


def terminal_columns() -> int:
    """``COLUMNS`` when it is a positive number; else the width of the terminal the process's standard
    output is; else 80 -- ``shutil.get_terminal_size()``'s rule."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns or FALLBACK_COLUMNS


def view_width(stream: TextIO | None = None) -> int | None:
    """The width to fit: ``COLUMNS`` when set, else the terminal's; ``None`` when piped (no limit)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    out = stream or sys.stdout
    if hasattr(out, "isatty") and out.isatty():
        return terminal_columns()
    return None
