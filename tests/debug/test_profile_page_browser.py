"""The profile page as headless Chromium lays it out: it fits the window, no word or number is
broken across lines (see tests/graph/report/browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.debug.profile_sample import write_sample
from tests.graph.report.browser import BROKEN_WORDS, measure, needs_browser

from tf2npu.debug.profile_page import render_page
from tf2npu.debug.profile_report import analyse

pytestmark = [needs_browser, pytest.mark.slow]

WIDTH = "document.documentElement.scrollWidth"


def test_the_sample_page_fits_the_window_with_no_broken_word(tmp_path: Path) -> None:
    page = render_page(analyse(write_sample(tmp_path)))
    seen = measure(page, tmp_path, {"width": WIDTH, "inner": "window.innerWidth",
                                    "broken": BROKEN_WORDS})  # fmt: skip
    assert seen["width"] <= seen["inner"]
    assert seen["broken"] == []
