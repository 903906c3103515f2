"""Report views: a generic table model, rendered on the terminal (report.terminal) or as HTML."""

from zluda_runner.report.html import render_html, table_html
from zluda_runner.report.table import STATUS_CLASSES, Column, Section, Table

__all__ = [
    "STATUS_CLASSES",
    "Column",
    "Section",
    "Table",
    "render_html",
    "table_html",
]
