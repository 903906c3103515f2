"""The matrix as one self-contained HTML page: no network, sortable and filterable.

The table is plain HTML (readable with scripts off); a few lines of inline script
sort on a header click and filter rows by the text typed (or given in the link:
``matrix.html#filter=gfx1100``). Each cell's failing items
open in a ``<details>`` drill-down.
"""

from __future__ import annotations

from html import escape

from zluda_runner.results.matrix import Cell, Matrix, Rate

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em;margin:0 0 .2em}
.meta{color:#666;margin-bottom:1em}
input{font:inherit;padding:.3em .5em;width:22em;margin-right:1em}
table{border-collapse:collapse;margin-top:.8em;min-width:60em}
th,td{border:1px solid #ccc;padding:.35em .6em;text-align:left;vertical-align:top}
th{background:#f0f0f0;cursor:pointer;user-select:none;white-space:nowrap}
th.asc::after{content:" \\25B2"} th.desc::after{content:" \\25BC"}
td.good{background:#d8f0d8} td.fair{background:#fbefc8} td.bad{background:#f6d0d0} td.none{color:#999}
td:nth-child(-n+3),td:nth-child(8){white-space:nowrap}
details summary{cursor:pointer;color:#a33}
ul{margin:.3em 0 0 1em;padding:0} li{font-family:ui-monospace,monospace;font-size:12px}
.k{color:#666}
"""

_SCRIPT = """
(function(){
  var table=document.getElementById('matrix'), body=table.tBodies[0];
  var heads=table.tHead.rows[0].cells;
  for (let i=0;i<heads.length;i++){
    heads[i].addEventListener('click',function(){
      var asc=!heads[i].classList.contains('asc');
      for (var h of heads) h.classList.remove('asc','desc');
      heads[i].classList.add(asc?'asc':'desc');
      var rows=Array.from(body.rows);
      rows.sort(function(a,b){
        var x=a.cells[i].dataset.sort, y=b.cells[i].dataset.sort;
        var nx=parseFloat(x), ny=parseFloat(y);
        var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
        return asc?c:-c;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  }
  var box=document.getElementById('filter'), only=document.getElementById('failing');
  function apply(){
    var words=box.value.toLowerCase().split(/\\s+/).filter(Boolean), shown=0;
    for (var r of body.rows){
      var text=r.textContent.toLowerCase();
      var ok=words.every(function(w){return text.indexOf(w)>=0;}) && (!only.checked||r.dataset.failing==='1');
      r.style.display=ok?'':'none'; if(ok) shown++;
    }
    document.getElementById('shown').textContent=shown;
  }
  box.addEventListener('input',apply); only.addEventListener('change',apply);
  var m=/[#&]filter=([^&]*)/.exec(location.hash);  // a link can carry its filter: page.html#filter=gfx1100
  if (m){ box.value=decodeURIComponent(m[1]); apply(); }
})();
"""


def _rate_cell(rate: Rate | None) -> str:
    if rate is None or rate.percent is None:
        return '<td class="none" data-sort="-1">-</td>'
    pct = rate.percent
    cls = "good" if pct >= 95 else "fair" if pct >= 70 else "bad"
    return f'<td class="{cls}" data-sort="{pct:.3f}">{escape(rate.text())}</td>'


def _ab_cell(verdict: str | None) -> str:
    if not verdict:
        return '<td class="none" data-sort="">-</td>'
    cls = "good" if verdict.startswith("agree") else "bad" if verdict.startswith("differ") else "fair"
    return f'<td class="{cls}" data-sort="{escape(verdict)}">{escape(verdict)}</td>'


def _failing_cell(cell: Cell) -> str:
    if not cell.failing:
        return '<td data-sort="0">none</td>'
    items = "".join(
        f'<li><span class="k">{escape(f.kind)}</span> {escape(f.item)}: {escape(f.status)}'
        + (f" <span class='k'>{escape(f.detail[:200])}</span>" if f.detail else "")
        + "</li>"
        for f in cell.failing
    )
    return (
        f'<td data-sort="{len(cell.failing)}"><details><summary>{len(cell.failing)} failing</summary>'
        f"<ul>{items}</ul></details></td>"
    )


def render_html(matrix: Matrix, title: str = "ZLUDA compatibility matrix") -> str:
    rows = []
    for c in matrix.cells:
        rows.append(
            f'<tr data-failing="{int(bool(c.failing))}">'
            f'<td data-sort="{escape(c.release)}">{escape(c.release)}</td>'
            f'<td data-sort="{escape(c.gfx)}">{escape(c.gfx)}</td>'
            f'<td data-sort="{escape(c.torch)}">{escape(c.torch)}</td>'
            f"{_rate_cell(c.probe)}{_rate_cell(c.torch_ops)}{_ab_cell(c.ab)}"
            f'<td data-sort="{c.runs}">{c.runs}</td>'
            f'<td data-sort="{escape(c.last)}">{escape(c.last[:16].replace("T", " "))}</td>'
            f"{_failing_cell(c)}</tr>"
        )
    heads = "".join(
        f"<th>{h}</th>"
        for h in (
            "Release",
            "GPU target",
            "Torch build",
            "Probe cases",
            "Torch ops",
            "A/B",
            "Runs",
            "Last run",
            "Failing items",
        )
    )
    meta = (
        f"{matrix.runs} runs &middot; {len(matrix.releases)} releases &times; "
        f"{len(matrix.gfx_targets)} GPU targets "
        f"&times; {len(matrix.torch_builds)} torch builds &middot; each cell: the latest run of each kind"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f'<h1>{escape(title)}</h1><div class="meta">{meta}</div>'
        '<label><input id="filter" type="search" placeholder="filter: release, gfx, torch, op…"></label>'
        '<label><input id="failing" type="checkbox" style="width:auto"> only cells with failures</label>'
        f' &middot; <span id="shown">{len(matrix.cells)}</span> shown'
        f'<table id="matrix"><thead><tr>{heads}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
