"""Line charts as inline SVG, in the look of :mod:`tf2npu.graph.report.page` (TF-free).

One function, :func:`line_chart`: several named series of ``(step, value)`` points, axes with
ticks on round numbers, a legend under the plot, an optional shaded band (a noise floor, a
tolerance), optional vertical markers (the first divergence) and a log scale, chosen by itself
when the values span decades. Nothing is measured by a browser: text widths are estimated from
the character count at the page's 12 px label font, generously, so that tick labels, marker
labels and legend entries are laid out apart and never run into each other or out of the
drawing; a name too long for its place is shortened with an ellipsis, the whole name in the
element's ``<title>`` (the browser's tooltip).

>>> svg = line_chart([Series("loss", [(1, 2.0), (2, 1.0)])], title="loss")
>>> svg.startswith('<svg class="chart"') and "loss" in svg
True
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = [
    "COLOURS",
    "MAX_POINTS",
    "Band",
    "Marker",
    "Series",
    "line_chart",
    "log_ticks",
    "nice_ticks",
    "text_width",
    "thin",
    "tick_text",
]

COLOURS = ("#1565c0", "#ef6c00", "#2e7d32", "#c62828", "#6a1b9a", "#00838f", "#795548", "#546e7a")
"""Series colours, in order (distinct in print and for the common colour blindnesses)."""
MAX_POINTS = 2000
"""Points drawn per series; a longer one keeps each bucket's first, lowest and highest point."""
CHAR_WIDTH = 7.2
"""Estimated width of one character of the 12 px label font (wider than most glyphs)."""
LINE = 16
"""Height of one line of label text."""
_LEFT_MIN, _RIGHT, _TOP, _AXIS = 48, 16, 28, 40
_SWATCH = 22


@dataclass(frozen=True)
class Series:
    """One line: ``points`` are ``(x, y)``; a ``y`` that is None, NaN or infinite is a gap."""

    name: str
    points: Sequence[tuple[float, float | None]]
    dashed: bool = False
    dots: bool = False
    """Points only (a dot each), no line between them."""
    colour: str = ""
    """A colour that means something (green: matches); ``""``: the next of :data:`COLOURS`."""


@dataclass(frozen=True)
class Band:
    """A shaded area: ``points`` are ``(x, low, high)`` (one point: the whole width)."""

    label: str
    points: Sequence[tuple[float, float, float]]


@dataclass(frozen=True)
class Marker:
    """A vertical line at ``x``, labelled at the top of the plot."""

    x: float
    label: str


def text_width(text: str) -> float:
    """The estimated width in pixels of ``text`` as a label."""
    return len(text) * CHAR_WIDTH


def _shorten(text: str, width: float) -> str:
    """``text``, or its start and an ellipsis, to fit ``width`` pixels."""
    fits = max(1, int(width // CHAR_WIDTH))
    return text if len(text) <= fits else text[: max(1, fits - 1)] + "…"


def nice_ticks(low: float, high: float, most: int) -> list[float]:
    """At most ``most`` (>= 2) round values (1, 2 or 5 times a power of ten apart) covering
    ``[low, high]``: the first at or below ``low``, the last at or above ``high``.

    >>> nice_ticks(0.0, 1.0, 6)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> nice_ticks(3.0, 3.0, 5)
    [2.0, 2.5, 3.0, 3.5, 4.0]
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"nice_ticks needs finite bounds, not {low!r}, {high!r}")
    if high < low:
        low, high = high, low
    if high == low:
        pad = abs(low) * 0.25 or 1.0
        low, high = low - pad, high + pad
    most = max(2, most)
    raw = (high - low) / (most - 1)
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0, 20.0):
        step = factor * power
        first, last = math.floor(low / step), math.ceil(high / step)
        if last - first + 1 <= most:
            break
    ticks = [round(k * step, 12) for k in range(first, last + 1)]
    return [0.0 if t == 0 else t for t in ticks]


def log_ticks(low: float, high: float, most: int) -> list[float]:
    """Powers of ten covering ``[low, high]`` (both > 0), every k-th so at most ``most``.

    >>> log_ticks(0.003, 20.0, 8)
    [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]
    """
    if not (low > 0 and high > 0):
        raise ValueError(f"log_ticks needs positive bounds, not {low!r}, {high!r}")
    first = math.floor(math.log10(min(low, high)))
    last = math.ceil(math.log10(max(low, high)))
    if first == last:
        last += 1
    every = max(1, math.ceil((last - first + 1) / max(2, most)))
    while (last - first) % every:
        last += 1
    return [10.0**k for k in range(first, last + 1, every)]


def tick_text(value: float, ticks: Sequence[float], log: bool = False) -> str:
    """A tick's label: as few digits as tell the ticks apart.

    >>> [tick_text(t, [0.0, 0.5, 1.0]) for t in (0.0, 0.5, 1.0)]
    ['0', '0.5', '1.0']
    >>> tick_text(1e-05, [1e-06, 1e-05], log=True)
    '1e-05'
    """
    if log:
        return f"{value:g}" if 1e-3 <= value < 1e5 else f"{value:.0e}"
    step = min((abs(b - a) for a, b in itertools.pairwise(ticks) if b != a), default=1)
    biggest = max(abs(t) for t in ticks) or 1.0
    if biggest >= 1e6 or biggest < 1e-3:
        digits = max(0, math.floor(math.log10(biggest)) - math.floor(math.log10(step)))
        return f"{value:.{digits}e}" if value else "0"
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:,.{decimals}f}"
    return "0" if float(text.replace(",", "")) == 0 else text


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _y(point: tuple[float, float | None]) -> float:
    return point[1] or 0.0


def thin(points: Sequence[tuple[float, float | None]]) -> list[tuple[float, float | None]]:
    """At most about :data:`MAX_POINTS` points: per bucket, its first, lowest and highest (so
    a spike survives; thinning thinned points again keeps it too)."""
    if len(points) <= MAX_POINTS:
        return list(points)
    size = math.ceil(len(points) / (MAX_POINTS // 3))
    kept: list[tuple[float, float | None]] = []
    for start in range(0, len(points), size):
        bucket = points[start : start + size]
        values = [p for p in bucket if _finite(p[1])]
        chosen = {id(bucket[0]): bucket[0]}
        if values:
            for p in (
                min(values, key=lambda p: p[1] or 0.0),
                max(values, key=lambda p: p[1] or 0.0),
            ):
                chosen[id(p)] = p
        kept.extend(sorted(chosen.values(), key=lambda p: p[0]))
    return kept


@dataclass(frozen=True)
class _Scale:
    low: float
    high: float
    start: float
    length: float
    log: bool = False
    flip: bool = False

    def __call__(self, value: float) -> float:
        if self.log:
            a, b, v = math.log10(self.low), math.log10(self.high), math.log10(value)
        else:
            a, b, v = self.low, self.high, value
        share = (v - a) / (b - a) if b != a else 0.5
        return self.start + (1 - share if self.flip else share) * self.length


def _use_log(values: Sequence[float], log: bool | None) -> bool:
    if log is not None:
        return log
    positive = [v for v in values if v > 0]
    return len(positive) == len(values) > 0 and max(positive) / min(positive) >= 1e3


def _y_values(series: Sequence[Series], bands: Sequence[Band], log: bool | None) -> list[float]:
    values = [_y(p) for s in series for p in s.points if _finite(p[1])]
    values += [v for b in bands for p in b.points for v in p[1:] if math.isfinite(v)]
    return [v for v in values if v > 0] if log else values


def line_chart(
    series: Sequence[Series],
    *,
    title: str = "",
    x_label: str = "step",
    y_label: str = "",
    bands: Sequence[Band] = (),
    markers: Sequence[Marker] = (),
    log: bool | None = None,
    width: int = 940,
    plot_height: int = 260,
) -> str:
    """The chart as one ``<svg>`` element.

    ``log``: None chooses a log scale when every value is positive and they span three decades
    or more; with a log scale, values at or below 0 are left out (gaps). A series with no
    finite point is still named in the legend, with "(no finite value)".
    """
    drawn = [Series(s.name, thin(s.points), s.dashed, s.dots, s.colour) for s in series]
    log_scale = _use_log(_y_values(drawn, bands, None), log)
    ys = _y_values(drawn, bands, log_scale)
    xs = [float(p[0]) for s in drawn for p in s.points] + [m.x for m in markers]
    xs += [p[0] for b in bands for p in b.points if len(b.points) > 1]
    if not ys:
        ys = [1.0] if log_scale else [0.0]
    if not xs:
        xs = [0.0, 1.0]
    y_ticks = log_ticks(min(ys), max(ys), 7) if log_scale else nice_ticks(min(ys), max(ys), 7)
    y_text = [tick_text(t, y_ticks, log_scale) for t in y_ticks]
    left = max(_LEFT_MIN, int(max(text_width(t) for t in y_text)) + 14 + (LINE if y_label else 0))
    plot_w = width - left - _RIGHT
    x_ticks = _x_ticks(min(xs), max(xs), plot_w)
    x_text = [tick_text(t, x_ticks) for t in x_ticks]
    overhang = text_width(x_text[-1]) / 2 + 2 - _RIGHT  # the last tick's label is centred on it
    if overhang > 0:
        plot_w -= math.ceil(overhang)
        x_ticks = _x_ticks(min(xs), max(xs), plot_w)
        x_text = [tick_text(t, x_ticks) for t in x_ticks]
    top = _TOP if title else 10
    legend, legend_h = _legend(drawn, bands, left, plot_w, top + plot_height + _AXIS)
    y_scale = _Scale(y_ticks[0], y_ticks[-1], top, plot_height, log_scale, flip=True)
    x_scale = _Scale(x_ticks[0], x_ticks[-1], left, plot_w)
    height = top + plot_height + _AXIS + legend_h
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title or "chart")}">',
        f"<title>{escape(title)}</title>" if title else "",
        f'<text class="label chart-title" x="{left}" y="{top - 10}">'
        f"{escape(_shorten(title, plot_w))}</text>"
        if title
        else "",
        f'<rect class="frame" x="{left}" y="{top}" width="{plot_w}" height="{plot_height}" '
        'fill="none" stroke="#bbb"/>',
    ]
    parts += [_band(b, x_scale, y_scale, log_scale) for b in bands]
    parts += _grid(y_ticks, y_text, x_ticks, x_text, x_scale, y_scale, top + plot_height)
    for i, s in enumerate(drawn):
        parts.append(_path(s, _colour(s, i), x_scale, y_scale, log_scale))
    parts += _markers(markers, x_scale, top, plot_height, left + plot_w)
    if x_label:
        parts.append(
            f'<text class="label axis-label" x="{left + plot_w / 2:.1f}" '
            f'y="{top + plot_height + 34}" text-anchor="middle">{escape(x_label)}</text>'
        )
    if y_label:
        middle = top + plot_height / 2
        parts.append(
            f'<text class="label axis-label" x="12" y="{middle:.1f}" text-anchor="middle" '
            f'transform="rotate(-90 12 {middle:.1f})">{escape(_shorten(y_label, plot_height))}'
            "</text>"
        )
    parts.append(legend)
    parts.append("</svg>")
    return "".join(parts)


def _colour(series: Series, index: int) -> str:
    return series.colour or COLOURS[index % len(COLOURS)]


def _x_ticks(low: float, high: float, plot_w: float) -> list[float]:
    """Round x values, as many as fit with their labels apart; whole numbers when the x
    values are (steps and op indices are), so no tick falls between two of them."""
    whole = low == int(low) and high == int(high)
    most = min(12, int(high - low) + 1) if whole else 12
    for count in range(max(2, most), 1, -1):
        ticks = nice_ticks(low, high, count)
        if whole and any(t != int(t) for t in ticks):
            continue
        texts = [tick_text(t, ticks) for t in ticks]
        gap = plot_w / max(1, len(ticks) - 1)
        if max(text_width(t) for t in texts) + 12 <= gap:
            return ticks
    return [low, high] if high > low else nice_ticks(low, high, 2)


def _grid(
    y_ticks: Sequence[float],
    y_text: Sequence[str],
    x_ticks: Sequence[float],
    x_text: Sequence[str],
    x_scale: _Scale,
    y_scale: _Scale,
    bottom: float,
) -> list[str]:
    out = []
    for value, text in zip(y_ticks, y_text, strict=True):
        y = y_scale(value)
        out.append(
            f'<line class="grid" x1="{x_scale.start}" y1="{y:.1f}" '
            f'x2="{x_scale.start + x_scale.length}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text class="label tick y-tick" x="{x_scale.start - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{escape(text)}</text>'
        )
    for value, text in zip(x_ticks, x_text, strict=True):
        x = x_scale(value)
        out.append(
            f'<line class="grid" x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" '
            'stroke="#999"/>'
            f'<text class="label tick x-tick" x="{x:.1f}" y="{bottom + 16}" '
            f'text-anchor="middle">{escape(text)}</text>'
        )
    return out


def _path(series: Series, colour: str, x_scale: _Scale, y_scale: _Scale, log: bool) -> str:
    """The series as one path; gaps where a value is missing (or not positive on a log
    scale); a lone point between gaps is a dot."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in series.points:
        if not _finite(y) or (log and (y or 0.0) <= 0):
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append((x_scale(float(x)), y_scale(float(y or 0.0))))
    d, dots = [], []
    for run in runs:
        if series.dots:
            dots += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>' for x, y in run]
        elif len(run) == 1:
            dots.append(
                f'<circle cx="{run[0][0]:.1f}" cy="{run[0][1]:.1f}" r="2.5" fill="{colour}"/>'
            )
        elif run:
            d.append("M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in run))
    dash = ' stroke-dasharray="6 4"' if series.dashed else ""
    path = (
        f'<path class="series" d="{" ".join(d)}" fill="none" stroke="{colour}" '
        f'stroke-width="1.8"{dash}><title>{escape(series.name)}</title></path>'
        if d
        else ""
    )
    return f'<g class="series-group">{path}{"".join(dots)}</g>'


def _band(band: Band, x_scale: _Scale, y_scale: _Scale, log: bool) -> str:
    points = list(band.points)
    if len(points) == 1:
        _, low, high = points[0]
        points = [(x_scale.low, low, high), (x_scale.high, low, high)]

    def y(value: float) -> float:
        lowest = y_scale.low if log else -math.inf
        clipped = min(max(value, lowest, y_scale.low), y_scale.high)
        return y_scale(clipped)

    upper = [f"{x_scale(x):.1f},{y(high):.1f}" for x, _, high in points]
    lower = [f"{x_scale(x):.1f},{y(low):.1f}" for x, low, _ in reversed(points)]
    return (
        f'<path class="band" d="M{" L".join(upper + lower)} Z" fill="#90caf9" '
        f'fill-opacity="0.35" stroke="none"><title>{escape(band.label)}</title></path>'
    )


def _markers(
    markers: Sequence[Marker], x_scale: _Scale, top: float, plot_h: float, right: float
) -> list[str]:
    """Each marker's line, and its label on the first line down where it overlaps none of
    the labels placed before it (right of the line, or left when the plot ends first)."""
    out: list[str] = []
    placed: list[tuple[float, float, int]] = []  # x0, x1, row
    for marker in markers:
        x = x_scale(marker.x)
        text = _shorten(marker.label, right - x_scale.start - 8)
        w = text_width(text)
        x0 = x + 4 if x + 4 + w <= right else max(x_scale.start + 2, x - 4 - w)
        anchor_right = x0 < x
        row = 0
        while any(r == row and x0 < b and a < x0 + w for a, b, r in placed):
            row += 1
        placed.append((x0, x0 + w, row))
        label_y = top + 14 + row * LINE
        text_x = x0 + w if anchor_right else x0
        anchor = "end" if anchor_right else "start"
        out.append(
            f'<line class="marker" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" '
            'stroke="#b71c1c" stroke-width="1.5" stroke-dasharray="3 3"/>'
            f'<text class="label marker-label" x="{text_x:.1f}" y="{label_y}" '
            f'text-anchor="{anchor}" fill="#b71c1c" stroke="#fff" stroke-width="3" '
            f'paint-order="stroke"><title>{escape(marker.label)}</title>'
            f"{escape(text)}</text>"
        )
    return out


def _legend(
    series: Sequence[Series], bands: Sequence[Band], left: float, plot_w: float, y: float
) -> tuple[str, int]:
    """The legend's items in rows under the plot, starting at ``y``; and its height."""
    items: list[tuple[str, str]] = []  # swatch, text
    for i, s in enumerate(series):
        colour = _colour(s, i)
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        swatch = (
            f'<circle cx="8" cy="-4" r="3.5" fill="{colour}"/>'
            if s.dots
            else f'<line x1="0" y1="-4" x2="{_SWATCH - 6}" y2="-4" stroke="{colour}" '
            f'stroke-width="2.5"{dash}/>'
        )
        missing = "" if any(_finite(p[1]) for p in s.points) else " (no finite value)"
        items.append((swatch, s.name + missing))
    for band in bands:
        swatch = (
            f'<rect x="0" y="-10" width="{_SWATCH - 6}" height="10" fill="#90caf9" '
            'fill-opacity="0.6"/>'
        )
        items.append((swatch, band.label))
    out, x, row = [], 0.0, 0
    for swatch, text in items:
        shown = _shorten(text, plot_w - _SWATCH)
        w = _SWATCH + text_width(shown) + 18
        if x and x + w > plot_w:
            row, x = row + 1, 0.0
        out.append(
            f'<g class="legend-item" transform="translate({left + x:.1f},{y + 12 + LINE * row})">'
            f'{swatch}<text class="label legend-label" x="{_SWATCH}" y="0">'
            f"<title>{escape(text)}</title>{escape(shown)}</text></g>"
        )
        x += w
    return "".join(out), (LINE * (row + 1) + 8 if items else 0)
