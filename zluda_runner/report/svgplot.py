"""Line plots as inline SVG: one polyline per series, axes with ticks and units, a legend.

Generated here rather than by a plotting library: no dependency, no script, no network when the
page is opened (the HTML report is one file that can be mailed), and the same input always gives
the same bytes, so tests can read the plot like any other output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

# colour-blind-safe (Okabe-Ito), in the order runs come
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 130, 30, 44  # the legend sits right of the frame
MAX_POINTS = 2000  # per series: a longer series is thinned (every k-th point) to keep the page small


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]  # (x, y), x ascending


@dataclass(frozen=True)
class Plot:
    title: str
    x_label: str  # with its unit: "time (s)"
    y_label: str  # with its unit: "busy (%)"
    series: tuple[Series, ...]
    y_min: float | None = None  # fixed axis ends (busy: 0..100); None: from the data
    y_max: float | None = None
    marks: tuple[tuple[float, str], ...] = ()  # dashed horizontal lines with a label ("total 16 GiB")
    width: int = 720
    height: int = 260


def nice_ticks(lo: float, hi: float, count: int = 5) -> tuple[float, ...]:
    """About ``count`` round tick values (steps of 1, 2 or 5 times a power of ten) covering lo..hi."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return (0.0,)
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    ticks: list[float] = []
    value = first
    while value < hi + step * 0.5 and len(ticks) < 4 * count + 2:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < hi:
        ticks.append(round(value, 10))
    return tuple(ticks)


def tick_label(value: float) -> str:
    """``2.0`` -> ``"2"``, ``0.25`` -> ``"0.25"``, ``1500000`` -> ``"1.5e+06"``."""
    if value == 0:
        return "0"
    if abs(value) >= 1e5 or abs(value) < 1e-3:
        return f"{value:.2g}"
    return f"{value:.4g}"


def _thin(points: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    if len(points) <= MAX_POINTS:
        return points
    k = math.ceil(len(points) / MAX_POINTS)
    kept = points[::k]
    return kept if kept[-1] == points[-1] else (*kept, points[-1])


def render_svg(plot: Plot) -> str:
    """The plot as one ``<svg>`` element (no XML declaration: it is meant to sit inside HTML)."""
    series = tuple(Series(s.label, _thin(tuple(p for p in s.points if all(map(math.isfinite, p)))))
                   for s in plot.series)
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    x_ticks = nice_ticks(0.0 if not xs else min(0.0, min(xs)), max(xs, default=1.0))
    y_lo = plot.y_min if plot.y_min is not None else min([*ys, 0.0])
    y_hi = plot.y_max if plot.y_max is not None else max([*ys, *(v for v, _ in plot.marks)], default=1.0)
    y_ticks = nice_ticks(y_lo, max(y_hi, y_lo + 1e-9))
    x0, x1, y0, y1 = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]
    left, top = MARGIN_LEFT, MARGIN_TOP
    right, bottom = plot.width - MARGIN_RIGHT, plot.height - MARGIN_BOTTOM

    def sx(x: float) -> float:
        return left + (x - x0) / ((x1 - x0) or 1.0) * (right - left)

    def sy(y: float) -> float:
        return bottom - (y - y0) / ((y1 - y0) or 1.0) * (bottom - top)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{plot.width}" height="{plot.height}" '
        f'viewBox="0 0 {plot.width} {plot.height}" role="img" aria-label="{escape(plot.title)}" '
        'font-family="system-ui,sans-serif" font-size="11">',
        f"<title>{escape(plot.title)}</title>",
        f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(plot.title)}</text>',
        f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" fill="#fff" '
        'stroke="#888"/>',
    ]
    for t in y_ticks:
        y = sy(t)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="#444"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(tick_label(t))}</text>')
    for t in x_ticks:
        x = sx(t)
        out.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#444"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{escape(tick_label(t))}</text>')
    out.append(f'<text x="{(left + right) / 2:.1f}" y="{plot.height - 8}" text-anchor="middle">'
               f"{escape(plot.x_label)}</text>")
    out.append(f'<text transform="translate(14 {(top + bottom) / 2:.1f}) rotate(-90)" text-anchor="middle">'
               f"{escape(plot.y_label)}</text>")
    for value, label in plot.marks:
        y = sy(value)
        out.append(f'<line class="mark" x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#b00" '
                   'stroke-dasharray="5 4"/>')
        out.append(f'<text x="{right - 4}" y="{y - 4:.1f}" text-anchor="end" fill="#b00">'
                   f"{escape(label)}</text>")
    if not xs:
        out.append(f'<text x="{(left + right) / 2:.1f}" y="{(top + bottom) / 2:.1f}" text-anchor="middle" '
                   'fill="#888">no samples</text>')
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        if len(s.points) == 1:
            (px, py), = s.points
            out.append(f'<circle class="series" cx="{sx(px):.1f}" cy="{sy(py):.1f}" r="2.5" '
                       f'fill="{colour}"/>')
        elif s.points:
            coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s.points)
            out.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="1.6" '
                       f'points="{coords}"/>')
    for i, s in enumerate(series):  # the legend, right of the frame, one row per series
        colour = PALETTE[i % len(PALETTE)]
        y = top + 10 + 16 * i
        out.append(f'<line x1="{right + 10}" y1="{y - 4}" x2="{right + 26}" y2="{y - 4}" stroke="{colour}" '
                   'stroke-width="3"/>')
        out.append(f'<text class="legend" x="{right + 30}" y="{y}">{escape(s.label)}</text>')
    out.append("</svg>")
    return "\n".join(out)
