"""Report views: a generic table model rendered as Markdown or self-contained HTML."""

from .html import render_html, table_html
from .markdown import render_markdown, table_markdown
from .table import STATUS_CLASSES, Column, Section, Table

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
