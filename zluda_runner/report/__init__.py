"""Report views: a generic table model rendered as Markdown or self-contained HTML."""

from zluda_runner.report.html import render_html, table_html
from zluda_runner.report.markdown import render_markdown, table_markdown
from zluda_runner.report.table import STATUS_CLASSES, Column, Section, Table

__all__ = [
    "STATUS_CLASSES",
    "Column",
    "Section",
    "Table",
    "render_html",
    "render_markdown",
    "table_html",
    "table_markdown",
]
