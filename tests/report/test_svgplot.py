"""The inline SVG plots: round ticks, one polyline per series inside the frame, a legend, escaping."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from zluda_runner.report.html import Figure, render_html
from zluda_runner.report.svgplot import MAX_POINTS, Plot, Series, nice_ticks, render_svg, tick_label
from zluda_runner.report.table import Section

NS = {"s": "http://www.w3.org/2000/svg"}


def test_ticks_are_round_and_cover_the_range() -> None:
    assert nice_ticks(0, 100) == (0, 20, 40, 60, 80, 100)
    assert nice_ticks(0, 4.3) == (0, 1, 2, 3, 4, 5)
    assert nice_ticks(0.0, 0.037) == (0.0, 0.01, 0.02, 0.03, 0.04)
    ticks = nice_ticks(1.5, 17.2)
    assert ticks[0] <= 1.5 and ticks[-1] >= 17.2 and len(ticks) <= 8
    assert nice_ticks(3, 3) == (3, 3.2, 3.4, 3.6, 3.8, 4)  # a flat line still gets an axis
    assert nice_ticks(float("nan"), 1) == (0.0,)
    assert [tick_label(v) for v in (0, 2.0, 0.25, 1.5e6, 1e-4)] == ["0", "2", "0.25", "1.5e+06", "0.0001"]


def _plot(*series: Series, **kw: object) -> ET.Element:
    plot = Plot("GPU utilisation", "time (s)", "busy (%)", series, **kw)  # type: ignore[arg-type]
    return ET.fromstring(render_svg(plot))  # noqa: S314 -- our own output


def test_one_polyline_per_series_inside_the_frame_with_a_legend() -> None:
    runs = (Series("run 1 (compiles)", ((0.0, 0.0), (1.0, 80.0), (2.0, 40.0))),
            Series("run 2", ((0.0, 0.0), (0.5, 100.0), (1.5, 10.0))))
    svg = _plot(*runs, y_min=0.0, y_max=100.0)
    lines = svg.findall("s:polyline", NS)
    assert len(lines) == 2 and lines[0].get("stroke") != lines[1].get("stroke")
    frame = svg.find("s:rect", NS)
    assert frame is not None
    left, top = float(frame.get("x", 0)), float(frame.get("y", 0))
    right, bottom = left + float(frame.get("width", 0)), top + float(frame.get("height", 0))
    for line in lines:
        points = [tuple(map(float, p.split(","))) for p in (line.get("points") or "").split()]
        assert len(points) == 3
        assert all(left <= x <= right and top <= y <= bottom for x, y in points)
    # y grows upwards: 100% sits on the top edge, 0% on the bottom one
    second = [tuple(map(float, p.split(","))) for p in (lines[1].get("points") or "").split()]
    assert second[1][1] == top and second[0][1] == bottom
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert {"run 1 (compiles)", "run 2", "time (s)", "busy (%)", "GPU utilisation"} <= set(texts)
    assert {"0", "20", "40", "60", "80", "100"} <= set(texts)  # the y ticks, with the unit on the axis
    legend = [t for t in svg.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "legend"]
    assert [t.text for t in legend] == ["run 1 (compiles)", "run 2"]
    assert all(float(t.get("x", 0)) > right for t in legend)  # beside the frame, never over a line
    marked = _plot(*runs, marks=((120.0, "limit"),))
    (mark,) = marked.findall("s:line[@class='mark']", NS)
    assert "limit" in [t.text for t in marked.iter("{http://www.w3.org/2000/svg}text")]
    assert float(mark.get("y1", 0)) >= top  # the axis grows to show the mark


def test_output_is_deterministic_escaped_and_bounded() -> None:
    series = Series("<run> & \"1\"", tuple((i / 10, float(i % 7)) for i in range(3 * MAX_POINTS)))
    plot = Plot("t<", "x", "y", (series,))
    text = render_svg(plot)
    assert text == render_svg(plot)
    assert "<run>" not in text and "&lt;run&gt; &amp;" in text
    svg = ET.fromstring(text)  # noqa: S314 -- our own output
    (line,) = svg.findall("s:polyline", NS)
    assert len((line.get("points") or "").split()) <= MAX_POINTS + 1


def test_no_samples_says_so_and_a_single_sample_is_a_dot() -> None:
    empty = _plot(Series("run 1", ()))
    assert "no samples" in [t.text for t in empty.iter("{http://www.w3.org/2000/svg}text")]
    assert not empty.findall("s:polyline", NS)
    dot = _plot(Series("run 1", ((0.0, 5.0),)), Series("run 2", ((0.0, float("nan")), (1.0, 3.0))))
    assert len(dot.findall("s:circle", NS)) == 2  # non-finite points are dropped


def test_the_page_renderer_embeds_figures_as_they_are_and_escapes_sections() -> None:
    svg = render_svg(Plot("p", "x", "y", (Series("a", ((0.0, 1.0), (1.0, 2.0))),)))
    page = render_html("t", [Section("<s>", ["<b>line</b>"]), Figure(svg, "a <caption>", heading="plots")])
    assert svg in page and "<h2>plots</h2>" in page and "a &lt;caption&gt;" in page
    assert "&lt;b&gt;line&lt;/b&gt;" in page and "<h2>&lt;s&gt;</h2>" in page
    assert re.search(r"<figure><svg .*</svg><figcaption>", page, re.S)
