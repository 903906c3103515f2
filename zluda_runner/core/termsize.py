"""The terminal's width as the standard library reads it (``shutil.get_terminal_size().columns``), without
importing :mod:`shutil` (and the archive modules it imports): what ``zluda-run --help`` starts with."""

from __future__ import annotations

import os
import sys

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
