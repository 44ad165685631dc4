"""The SVG line chart from literal series: ticks, scales, gaps, bands, markers, legend."""

from __future__ import annotations

import doctest
import itertools
import math
import re
import xml.etree.ElementTree as ET

import pytest

from tf2npu.graph.report import chart
from tf2npu.graph.report.chart import (
    MAX_POINTS,
    Band,
    Marker,
    Series,
    line_chart,
    log_ticks,
    nice_ticks,
    text_width,
    tick_text,
)

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def _texts(root: ET.Element, css: str) -> list[ET.Element]:
    return [t for t in root.iter(f"{SVG}text") if css in t.get("class", "").split()]


def _label(element: ET.Element) -> str:
    """A text element's shown text (its <title> child is the tooltip)."""
    return (element.text or "") + "".join(child.tail or "" for child in element)


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(chart).failed == 0


@pytest.mark.parametrize(
    ("low", "high", "most", "expected"),
    [
        (0.0, 1.0, 6, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (1.0, 40.0, 9, [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0]),
        (0.13, 2.31, 7, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]),
        (-3.0, 4.0, 8, [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0]),
        (-3.0, 4.0, 5, [-4.0, -2.0, 0.0, 2.0, 4.0]),
        (5.0, 5.0, 5, [3.0, 4.0, 5.0, 6.0, 7.0]),
        (0.0, 0.0, 5, [-1.0, -0.5, 0.0, 0.5, 1.0]),
    ],
)
def test_nice_ticks_are_round_and_cover_the_range(
    low: float, high: float, most: int, expected: list[float]
) -> None:
    assert nice_ticks(low, high, most) == expected


def test_nice_ticks_refuse_non_finite_bounds() -> None:
    with pytest.raises(ValueError, match="finite bounds"):
        nice_ticks(0.0, math.inf, 5)


def test_log_ticks_are_powers_of_ten_thinned_to_fit() -> None:
    assert log_ticks(1e-10, 0.02, 7) == [1e-10, 1e-08, 1e-06, 1e-04, 1e-02, 1.0]
    assert log_ticks(2.0, 3.0, 5) == [1.0, 10.0]
    with pytest.raises(ValueError, match="positive bounds"):
        log_ticks(0.0, 1.0, 5)


def test_tick_text_uses_the_digits_the_step_needs() -> None:
    ticks = [0.0, 0.002, 0.004, 0.006]
    assert [tick_text(t, ticks) for t in ticks] == ["0", "0.002", "0.004", "0.006"]
    big = [0.0, 2e6, 4e6]
    assert [tick_text(t, big) for t in big] == ["0", "2e+06", "4e+06"]
    assert tick_text(1000.0, [0.0, 1000.0, 2000.0]) == "1,000"
    assert [tick_text(t, [1e-06, 1.0], log=True) for t in (1e-06, 1.0)] == ["1e-06", "1"]


def _two_runs() -> list[Series]:
    return [
        Series("original-1", [(1, 2.0), (2, 1.5), (3, 1.2), (4, 1.0)]),
        Series("migrated", [(1, 2.0), (2, 1.6), (3, None), (4, 1.1)], dashed=True),
    ]


def test_each_series_is_a_path_with_a_gap_where_a_value_is_missing() -> None:
    root = _parse(line_chart(_two_runs(), title="loss"))
    paths = [p for p in root.iter(f"{SVG}path") if p.get("class") == "series"]
    assert [p.findtext(f"{SVG}title") for p in paths] == ["original-1", "migrated"]
    assert paths[0].get("d", "").count("M") == 1
    assert paths[1].get("d", "").count("M") == 1  # steps 1-2; step 4 alone is a dot
    assert len(list(root.iter(f"{SVG}circle"))) == 1
    assert paths[1].get("stroke-dasharray") == "6 4"
    assert paths[0].get("stroke") != paths[1].get("stroke")


def test_points_map_onto_the_plot_box_and_the_y_axis_points_up() -> None:
    root = _parse(line_chart([Series("s", [(0, 0.0), (10, 1.0)])], log=False))
    frame = next(r for r in root.iter(f"{SVG}rect") if r.get("class") == "frame")
    x0, y0 = float(frame.get("x", 0)), float(frame.get("y", 0))
    w, h = float(frame.get("width", 0)), float(frame.get("height", 0))
    path = next(p for p in root.iter(f"{SVG}path") if p.get("class") == "series")
    (ax, ay), (bx, by) = [
        tuple(map(float, xy.split(","))) for xy in re.findall(r"[\d.]+,[\d.]+", path.get("d", ""))
    ]
    assert (ax, ay) == pytest.approx((x0, y0 + h), abs=0.1)
    assert (bx, by) == pytest.approx((x0 + w, y0), abs=0.1)


def test_values_spanning_decades_get_a_log_scale_unless_told() -> None:
    wide = [Series("diff", [(1, 1e-8), (2, 1e-3), (3, 0.5)])]
    ticks = [_label(t) for t in _texts(_parse(line_chart(wide)), "y-tick")]
    assert ticks[0] == "1e-08" and ticks[-1] == "1"
    linear = [_label(t) for t in _texts(_parse(line_chart(wide, log=False)), "y-tick")]
    assert linear[0] == "0"
    narrow = [Series("loss", [(1, 2.0), (2, 1.0)])]
    assert "e-" not in "".join(_label(t) for t in _texts(_parse(line_chart(narrow)), "y-tick"))


def test_a_log_scale_leaves_zero_and_negative_values_out() -> None:
    root = _parse(line_chart([Series("d", [(1, 0.0), (2, 1e-3), (3, 1e-1), (4, -1.0)])], log=True))
    path = next(p for p in root.iter(f"{SVG}path") if p.get("class") == "series")
    assert len(re.findall(r"[\d.]+,[\d.]+", path.get("d", ""))) == 2


def test_a_band_is_shaded_and_named_in_the_legend() -> None:
    svg = line_chart(_two_runs(), bands=[Band("noise floor 0.003", [(0, 0.0, 0.003)])])
    root = _parse(svg)
    band = next(p for p in root.iter(f"{SVG}path") if p.get("class") == "band")
    assert band.findtext(f"{SVG}title") == "noise floor 0.003"
    legend = [_label(t) for t in _texts(root, "legend-label")]
    assert legend == ["original-1", "migrated", "noise floor 0.003"]


def test_marker_labels_that_would_overlap_go_on_separate_lines() -> None:
    markers = [Marker(3, "keep_origin_dtype: first divergence, step 3"),
               Marker(3, "precision_mode: first divergence, step 3"),
               Marker(40, "far away")]  # fmt: skip
    series = [Series("loss", [(float(i), 1.0 / i) for i in range(1, 41)])]
    labels = _texts(_parse(line_chart(series, markers=markers)), "marker-label")
    ys = [float(t.get("y", 0)) for t in labels]
    assert [t.findtext(f"{SVG}title") for t in labels] == [m.label for m in markers]
    assert ys[0] != ys[1]
    assert ys[2] == ys[0]  # at the other end of the plot: no clash, first line
    assert labels[2].get("text-anchor") == "end"  # the plot ends right of step 40


def test_legend_entries_wrap_into_rows_inside_the_drawing() -> None:
    many = [Series(f"run-{i}-with-a-rather-long-name", [(1, float(i))]) for i in range(8)]
    svg = line_chart(many, width=600)
    root = _parse(svg)
    width = float(root.get("width", 0))
    height = float(root.get("height", 0))
    rows = set()
    for item in root.iter(f"{SVG}g"):
        if item.get("class") != "legend-item":
            continue
        x, y = map(float, re.findall(r"[\d.]+", item.get("transform", "")))
        text = _label(next(iter(item.iter(f"{SVG}text"))))
        assert x + 22 + text_width(text) <= width
        assert y <= height
        rows.add(y)
    assert len(rows) >= 3


def test_a_name_too_long_for_the_legend_is_shortened_with_its_whole_name_as_tooltip() -> None:
    name = "tower_0/" + "very_long_scope_name/" * 10 + "loss:0"
    root = _parse(line_chart([Series(name, [(1, 1.0)])], width=500))
    (label,) = _texts(root, "legend-label")
    assert _label(label).endswith("…") and label.findtext(f"{SVG}title") == name


def test_x_tick_labels_never_touch() -> None:
    series = [Series("loss", [(float(i), 1.0) for i in range(0, 1_000_001, 1000)])]
    labels = _texts(_parse(line_chart(series, width=500)), "x-tick")
    spans = [(float(t.get("x", 0)) - text_width(_label(t)) / 2,
              float(t.get("x", 0)) + text_width(_label(t)) / 2) for t in labels]  # fmt: skip
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))


def test_a_long_series_is_thinned_keeping_its_extremes() -> None:
    points: list[tuple[float, float | None]] = [(float(i), 1.0) for i in range(50_000)]
    points[31_337] = (31_337.0, 99.0)
    root = _parse(line_chart([Series("loss", points)], log=False))
    path = next(p for p in root.iter(f"{SVG}path") if p.get("class") == "series")
    drawn = re.findall(r"[\d.]+,[\d.]+", path.get("d", ""))
    assert len(drawn) <= MAX_POINTS + 3
    ticks = [_label(t) for t in _texts(root, "y-tick")]
    assert ticks[-1] == "100"  # the spike is kept, so the axis reaches it


def test_a_series_with_no_finite_value_is_named_as_such() -> None:
    root = _parse(line_chart([Series("nan run", [(1, math.nan), (2, None)])]))
    assert [_label(t) for t in _texts(root, "legend-label")] == ["nan run (no finite value)"]


def test_names_are_escaped() -> None:
    svg = line_chart([Series("a<b>&c", [(1, 1.0)])], title="<script>")
    assert "<script>" not in svg and "a&lt;b&gt;&amp;c" in svg


def test_dots_draw_points_only_and_a_colour_that_means_something_is_kept() -> None:
    dots = Series("matches", [(1, 1.0), (2, 2.0), (3, None)], dots=True, colour="#2e7d32")
    root = _parse(line_chart([dots, Series("line", [(1, 2.0), (3, 1.0)])]))
    circles = list(root.iter(f"{SVG}circle"))
    assert [c.get("fill") for c in circles] == ["#2e7d32"] * 3  # two points, one legend swatch
    assert [p.get("stroke") for p in root.iter(f"{SVG}path") if p.get("class") == "series"] == [
        chart.COLOURS[1]
    ]


def test_the_last_x_label_stays_inside_the_drawing() -> None:
    svg = line_chart([Series("loss", [(1.0, 1.0), (5000.0, 0.5)])], width=400)
    last = _texts(_parse(svg), "x-tick")[-1]
    assert float(last.get("x", 0)) + text_width(_label(last)) / 2 <= 400
