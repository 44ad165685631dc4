"""The profile page: advice first, charts inline, no network; a headless browser finds no console
error (Debian's chromium-headless-shell, which `make test` installs as root; else skipped)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.debug.profile_sample import write_sample

from tf2npu.debug.profile.page import render_page
from tf2npu.debug.profile.report import analyse

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")
BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def _page(tmp_path: Path) -> str:
    return render_page(analyse(write_sample(tmp_path)))


def test_advice_comes_first_then_the_charts_and_tables(tmp_path: Path) -> None:
    page = _page(tmp_path)
    headings = re.findall(r"<h2>(.*?)</h2>", page)
    assert headings[0].startswith("Advice (")
    assert headings[1:4] == ["Top ops by time", "Step breakdown", "Timeline"]
    assert page.count("<svg") == 4 and 'class="bar-device"' in page and 'class="bar-input"' in page
    text = page.replace("<wbr>", "")  # line-break opportunities in long names
    assert "reduce_sum_fp16" in text and "train.py:7 in &lt;module&gt;" in text


def test_the_page_fetches_nothing(tmp_path: Path) -> None:
    page = _page(tmp_path)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page


def test_a_script_error_would_fail_the_node_syntax_check(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = re.search(r"<script>(.*?)</script>", _page(tmp_path), re.S)
    assert script is not None
    path = tmp_path / "page.js"
    path.write_text(script.group(1), encoding="utf-8")
    subprocess.run([node, "--check", str(path)], check=True, timeout=60)
    path.write_text(script.group(1) + "\n}(", encoding="utf-8")
    broken = subprocess.run([node, "--check", str(path)], capture_output=True, timeout=60)
    assert broken.returncode != 0


@pytest.mark.skipif(BROWSER is None, reason="no headless Chromium: apt-get install "
                    "chromium-headless-shell (make test does this when run as root)")  # fmt: skip
def test_a_headless_browser_loads_the_page_without_console_errors(tmp_path: Path) -> None:
    path = tmp_path / "profile.html"
    path.write_text(_page(tmp_path), encoding="utf-8")
    assert BROWSER is not None
    done = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    assert 'data-ready="1"' in done.stdout  # the page's script ran to its end
    # and the check itself sees an error when there is one
    path.write_text(_page(tmp_path).replace("</body>", "<script>nope(</script></body>"))
    bad = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert any(":CONSOLE" in line for line in bad.stderr.splitlines())


def test_advice_rows_link_to_their_op_rows(tmp_path: Path) -> None:
    page = _page(tmp_path)
    advice = page[page.index("<h2>Advice") : page.index("<h2>Top ops")]
    links = re.findall(r'<a href="#(op-\d+)">(.*?)</a>', advice)
    assert links, advice
    for anchor, name in links:
        target = re.search(rf'<span class="op-anchor" id="{anchor}">(.*?)</span>', page)
        assert target is not None and target.group(1) == name  # the row of the same op
    # the float16 ReduceSum the advisor names is linked, by its engine name
    assert ("op-0", "rs/<wbr>_tf2npu_fp16") in links
    # the chart's bars link to the same rows
    assert '<a href="#op-0"><text' in page


def test_an_op_without_a_row_is_named_without_a_link(tmp_path: Path) -> None:
    from tf2npu.debug.profile import page as profile_page

    analysis = analyse(write_sample(tmp_path))
    assert profile_page._op_link("not_profiled", profile_page.op_anchors(analysis)) == (
        "not_profiled"
    )
