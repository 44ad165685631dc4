"""The HTML page as a browser lays it out: headless Chromium measures the page and the drawing.

The page itself has no script; the test adds one to a copy, which records what the browser
computed (scroll width, the boxes and line ends of the SVG) into the DOM that ``--dump-dom``
prints. `make test` installs chromium-headless-shell where it can (Debian, as root).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.graph.report.browser import BROKEN_WORDS, dump_probe, measure, needs_browser

from tf2npu.graph.decisions import CLUSTER, CLUSTERS, PLACEMENT, Cluster, Placement
from tf2npu.graph.engine import EngineRun
from tf2npu.graph.report.html import render_html
from tf2npu.graph.report.summary import summarize

pytestmark = needs_browser
WIDTH = 1000

_PROBE = """
<script>
window.addEventListener('load', () => {
  const box = e => { const b = e.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height]; };
  const out = {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    headings: [...document.querySelectorAll('h2')].map(h => h.textContent),
    hosts: [...document.querySelectorAll('rect.host')].map(box),
    devices: [...document.querySelectorAll('rect.device')].map(box),
    lines: [...document.querySelectorAll('line.edge')].map(l =>
      ['x1', 'y1', 'x2', 'y2'].map(a => l[a].baseVal.value)),
    labels: [...document.querySelectorAll('text')].map(t => [t.textContent, box(t)]),
  };
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def _measure(page: str, tmp_path: Path) -> dict:
    return dict(
        dump_probe(page.replace("</body>", _PROBE + "</body>"), tmp_path / "page.html", WIDTH)
    )


def _inside(point: tuple[float, float], box: list[float], slack: float = 1.5) -> bool:
    x, y = point
    return box[0] - slack <= x <= box[2] + slack and box[1] - slack <= y <= box[3] + slack


@pytest.fixture
def wide_run(make_run: Callable[..., EngineRun]) -> EngineRun:
    """The sample run with a second GeOp and a host op whose name is far wider than the page."""
    run = make_run()
    graph = run.graph
    long_name = "tower_0/" + "very_long_scope_name/" * 30 + "AsString"
    node = graph.add_node(long_name, "AsString", [graph["relu"].output()])
    node.meta[PLACEMENT] = Placement(False, 2, "gray_op", "AsString: gray op, host in mixed")
    graph["s"].meta[CLUSTER] = "GeOp1_1"
    graph.meta[CLUSTERS] = [*graph.meta[CLUSTERS], Cluster("GeOp1_1", ("s",), ("relu",), ())]
    return run


def test_page_fits_the_window_and_puts_errors_first(wide_run: EngineRun, tmp_path: Path) -> None:
    seen = _measure(render_html(summarize(wide_run)), tmp_path)
    assert seen["scrollWidth"] <= seen["innerWidth"], "a wide table or the drawing overflows"
    assert seen["headings"][0].startswith("Errors and warnings")


def test_each_line_runs_from_its_host_box_to_its_geop(wide_run: EngineRun, tmp_path: Path) -> None:
    summary = summarize(wide_run)
    seen = _measure(render_html(summary), tmp_path)
    hosts = dict(zip([r for r, _ in summary.host_ops_by_reason()], seen["hosts"], strict=True))
    devices = dict(zip([g.name for g in summary.geops], seen["devices"], strict=True))
    expected = {
        (reason, geop.name)
        for geop in summary.geops
        for reason, _ in (*geop.sources, *geop.sinks)
        if reason in hosts
    }
    drawn = set()
    for x1, y1, x2, y2 in seen["lines"]:
        start = [r for r, b in hosts.items() if _inside((x1, y1), b)]
        end = [g for g, b in devices.items() if _inside((x2, y2), b)]
        assert len(start) == 1 and len(end) == 1, (x1, y1, x2, y2)
        drawn.add((start[0], end[0]))
    assert drawn == expected
    assert len(seen["lines"]) == len(expected)


def test_node_counts_agree_across_the_page(wide_run: EngineRun, tmp_path: Path) -> None:
    summary = summarize(wide_run)
    seen = _measure(render_html(summary), tmp_path)
    texts = [t for t, _ in seen["labels"]]
    counts = [int(m.group(1)) for t in texts if (m := re.search(r"\((\d+) nodes?\)$", t))]
    host_total = sum(counts[: len(seen["hosts"])])
    device_total = sum(counts[len(seen["hosts"]) :])
    assert f"Host: {summary.host_nodes} nodes" in texts
    assert (host_total, device_total) == (summary.host_nodes, summary.device_nodes)
    assert any(h == f"Host ops ({summary.host_nodes})" for h in seen["headings"])


def test_line_labels_do_not_overlap(wide_run: EngineRun, tmp_path: Path) -> None:
    seen = _measure(render_html(summarize(wide_run)), tmp_path)
    boxes = [b for t, b in seen["labels"] if t.startswith("in ")]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            overlap = (
                min(a[2], b[2]) - max(a[0], b[0]) > 0 and min(a[3], b[3]) - max(a[1], b[1]) > 0
            )
            assert not overlap, (a, b)


@pytest.mark.slow
def test_no_word_or_number_is_broken_across_lines(wide_run: EngineRun, tmp_path: Path) -> None:
    page = render_html(summarize(wide_run))
    seen = measure(page, tmp_path, {"broken": BROKEN_WORDS})
    assert seen["broken"] == []
    # the check sees it when a cell may break anywhere (the style sheet before)
    anywhere = page.replace("</style>", "td { overflow-wrap: anywhere !important; }</style>")
    narrow = measure(anywhere, tmp_path, {"broken": BROKEN_WORDS}, width=420)
    assert narrow["broken"] != []


FAILING = """
(() => {
  const box = e => { const b = e.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height]; };
  return {
    boxes: [...document.querySelectorAll('rect.failing')].map(box),
    marks: [...document.querySelectorAll('text.failing-label')].map(t => [t.textContent, box(t)]),
  };
})()
"""
CLICK = """
(() => {
  const details = document.querySelector('details.name');
  if (!details) return null;
  const code = details.querySelector('code');
  const before = code.checkVisibility();
  details.querySelector('summary').click();
  return [details.querySelector('summary').textContent, before, code.checkVisibility(),
          code.textContent];
})()
"""


@pytest.mark.slow
def test_the_failing_box_holds_its_mark_and_internal_names_open_on_a_click(
    wide_run: EngineRun, tmp_path: Path
) -> None:
    graph = wide_run.graph
    cast = graph.add_node("relu/_tf2npu_to_f32", "Cast", [graph["relu"].output()],
                          origin=["relu"])  # fmt: skip
    cast.meta[PLACEMENT] = Placement(False, 1, "not_in_library", "Cast: not here")
    graph.add_node("cast_str", "AsString", [cast.output()]).meta[PLACEMENT] = Placement(
        False, 2, "gray_op", "AsString: gray op"
    )
    seen = measure(render_html(summarize(wide_run)), tmp_path,
                   {"failing": FAILING, "click": CLICK})  # fmt: skip
    [box] = seen["failing"]["boxes"]  # s's box: GeOp1_1 holds it here
    [(text, mark)] = seen["failing"]["marks"]
    assert text == "✖ s: table_split"
    assert box[0] <= mark[0] and mark[2] <= box[2] and box[1] <= mark[1] and mark[3] <= box[3]
    summary_text, before, after, code = seen["click"]
    assert (summary_text, code) == ("relu", "relu/_tf2npu_to_f32")
    assert (before, after) == (False, True)  # hidden, then shown by the click
