"""A plain table (columns + rows of cells) that every report view renders: on the terminal or as HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# status -> colour class; shared by probe, trace and the A/B report
STATUS_CLASSES = {
    "pass": "ok",
    "ok": "ok",
    "success": "ok",
    "fail": "bad",
    "error": "bad",
    "crashed": "bad",
    "mismatch": "bad",
    "failed": "bad",
    "missing": "warn",
    "timeout": "warn",
    "unavailable": "warn",
    "unsupported": "muted",
    "slower": "warn",
    "skipped": "muted",
    "n/a": "muted",
}


@dataclass
class Column:
    key: str
    label: str
    numeric: bool = False


@dataclass
class Table:
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]] = field(default_factory=list)
    status_key: str | None = "status"
    note: str = ""
    group_key: str | None = None  # HTML: a drop-down that shows one group (e.g. op family) at a time


@dataclass
class Section:
    heading: str
    lines: list[str] = field(default_factory=list)  # summary lines above the tables
    tables: list[Table] = field(default_factory=list)


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(cell_text(v) for v in value)
    return str(value)
