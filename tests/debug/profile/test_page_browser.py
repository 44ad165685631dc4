"""The profile page as headless Chromium lays it out: it fits the window, no word or number is
broken across lines (see tests/graph/report/browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.debug.profile_sample import write_sample
from tests.graph.report.browser import BROKEN_WORDS, measure, needs_browser

from tf2npu.debug.profile.page import render_page
from tf2npu.debug.profile.report import analyse

pytestmark = [needs_browser, pytest.mark.slow]

WIDTH = "document.documentElement.scrollWidth"


def test_the_sample_page_fits_the_window_with_no_broken_word(tmp_path: Path) -> None:
    page = render_page(analyse(write_sample(tmp_path)))
    seen = measure(page, tmp_path, {"width": WIDTH, "inner": "window.innerWidth",
                                    "broken": BROKEN_WORDS})  # fmt: skip
    assert seen["width"] <= seen["inner"]
    assert seen["broken"] == []


ZOOM = """
(() => {
  const plot = document.getElementById('tl-plot');
  const before = plot.viewBox.baseVal.width;
  const box = plot.getBoundingClientRect();
  plot.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: box.left + box.width / 2,
                                              clientY: box.top + 5, bubbles: true,
                                              cancelable: true}));
  const zoomed = plot.viewBox.baseVal.width;
  const text = document.getElementById('tl-range').textContent;
  plot.dispatchEvent(new MouseEvent('dblclick', {bubbles: true}));
  return [before, zoomed, plot.viewBox.baseVal.width, text];
})()
"""
"""Wheel up over the middle of the plot, then double-click: the widths of the box shown."""
LANES = """
[...document.querySelectorAll('#timeline > text')].map(t => {
  const b = t.getBBox(); return [t.textContent, b.x, b.x + b.width]; })
"""


def test_the_timeline_zooms_and_its_labels_stay_in_the_drawing(tmp_path: Path) -> None:
    page = render_page(analyse(write_sample(tmp_path)))
    seen = measure(page, tmp_path, {"zoom": ZOOM, "labels": LANES})
    before, zoomed, reset, text = seen["zoom"]
    assert zoomed == pytest.approx(before * 0.8)
    assert reset == pytest.approx(before)
    assert not text.startswith("0 – ") and text.endswith("after model 2 iteration 2 starts")
    for label, left, right in seen["labels"]:
        assert left >= 0 and right <= 960, label
