"""A self-contained HTML page: tables sortable by any column, filterable by text (also from the
link: ``page.html#filter=TEXT``) and status.

No external assets: the CSS and the small script are inline, so the file can be mailed.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from zluda_runner.report.table import STATUS_CLASSES, Section, Table, cell_text

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.2em;margin-top:1.6em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0 1em;min-width:40%}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0;cursor:pointer;user-select:none}th.num,td.num{text-align:right}
th[data-dir=asc]::after{content:" \\25B2"}th[data-dir=desc]::after{content:" \\25BC"}
tr.ok td.st{background:#d4f7d4}tr.bad td.st{background:#f9d0d0}tr.warn td.st{background:#fbeec0}
tr.muted{color:#888}.tools{margin:.3em 0}.tools input{padding:2px 6px;width:18em}
.tools label{margin-left:.8em}.note{color:#555}
figure{display:inline-block;margin:.4em 1em .8em 0}figcaption{color:#555;font-size:.9em}
"""

_JS = """
document.querySelectorAll('table.report').forEach(function(t){
  var body=t.tBodies[0], rows=Array.prototype.slice.call(body.rows);
  var box=t.previousElementSibling;
  t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
    var dir=th.dataset.dir==='asc'?'desc':'asc';
    t.querySelectorAll('th').forEach(function(o){delete o.dataset.dir});
    th.dataset.dir=dir;var num=th.classList.contains('num');
    rows.sort(function(a,b){
      var x=a.cells[i].dataset.v||a.cells[i].textContent,y=b.cells[i].dataset.v||b.cells[i].textContent;
      var r=num?(parseFloat(x)||0)-(parseFloat(y)||0):x.localeCompare(y);return dir==='asc'?r:-r});
    rows.forEach(function(r){body.appendChild(r)});});});
  function apply(){var q=box.querySelector('input').value.toLowerCase();
    var on={};box.querySelectorAll('input[type=checkbox]').forEach(function(c){on[c.value]=c.checked});
    var sel=box.querySelector('select.group'), g=sel?sel.value:'';
    rows.forEach(function(r){var s=r.dataset.status;
      var show=(!s||on[s]!==false)&&r.textContent.toLowerCase().indexOf(q)>=0&&(!g||r.dataset.group===g);
      r.style.display=show?'':'none'});}
  box.querySelectorAll('input,select').forEach(function(i){i.addEventListener('input',apply)});
  var m=/[#&]filter=([^&]*)/.exec(location.hash);  // a link can carry its filter: page.html#filter=gfx1100
  if(m){box.querySelector('input').value=decodeURIComponent(m[1]);apply();}
});
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def table_html(table: Table) -> str:
    parts = []
    if table.title:
        parts.append(f"<h3>{_e(table.title)}</h3>")
    if table.note:
        parts.append(f'<p class="note">{_e(table.note)}</p>')
    statuses = (
        sorted({str(r.get(table.status_key, "")) for r in table.rows} - {""}) if table.status_key else []
    )
    checks = "".join(
        f'<label><input type="checkbox" value="{_e(s)}" checked> {_e(s)}</label>' for s in statuses
    )
    groups = sorted({str(r.get(table.group_key, "")) for r in table.rows}) if table.group_key else []
    select = (
        '<select class="group"><option value="">all</option>'
        + "".join(f'<option value="{_e(g)}">{_e(g)}</option>' for g in groups)
        + "</select>"
        if groups
        else ""
    )
    parts.append(f'<div class="tools"><input type="search" placeholder="filter rows">{select}{checks}</div>')
    head = "".join(f'<th class="{"num" if c.numeric else ""}">{_e(c.label)}</th>' for c in table.columns)
    body = []
    for row in table.rows:
        status = str(row.get(table.status_key, "")) if table.status_key else ""
        css = STATUS_CLASSES.get(status, "")
        cells = []
        for c in table.columns:
            value = row.get(c.key)
            classes = " ".join(
                x for x in ("num" if c.numeric else "", "st" if c.key == table.status_key else "") if x
            )
            sort_value = f' data-v="{_e(value)}"' if c.numeric and value is not None else ""
            cells.append(f'<td class="{classes}"{sort_value}>{_e(cell_text(value))}</td>')
        group = f' data-group="{_e(row.get(table.group_key, ""))}"' if table.group_key else ""
        body.append(f'<tr class="{css}" data-status="{_e(status)}"{group}>{"".join(cells)}</tr>')
    parts.append(
        f'<table class="report"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )
    return "\n".join(parts)


@dataclass(frozen=True)
class Figure:
    """A figure of markup this package made (an inline SVG plot, :mod:`zluda_runner.report.svgplot`),
    put on the page as it is: never outside text, which a :class:`Section` escapes. A ``heading``
    opens a new part of the page; figures without one follow the one before."""

    markup: str
    caption: str = ""
    heading: str = ""


def figure_html(figure: Figure) -> str:
    caption = f"<figcaption>{_e(figure.caption)}</figcaption>" if figure.caption else ""
    head = f"<h2>{_e(figure.heading)}</h2>\n" if figure.heading else ""
    return f"{head}<figure>{figure.markup}{caption}</figure>"


def render_html(title: str, sections: Sequence[Section | Figure]) -> str:
    """The whole page: one heading, then each section's lines and tables (and each figure)."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
    ]
    for section in sections:
        if isinstance(section, Figure):
            out.append(figure_html(section))
            continue
        out.append(f"<h2>{_e(section.heading)}</h2>")
        out += [f"<p>{_e(line)}</p>" for line in section.lines]
        out += [table_html(t) for t in section.tables]
    out.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(out) + "\n"
