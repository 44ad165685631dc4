"""The HTML page: self-contained, boxes per GeOp and host reason, the tables, escaping."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from tf2npu.graph.decisions import CLUSTER, CLUSTERS, PLACEMENT, Cluster, Placement
from tf2npu.graph.engine import EngineRun
from tf2npu.graph.report.html import BOXES_DRAWN, render_html
from tf2npu.graph.report.summary import GraphSummary, summarize


def test_page_is_self_contained(summary: GraphSummary) -> None:
    page = render_html(summary)
    assert page.startswith("<!DOCTYPE html>")
    for external in ("http://", "https://", "src=", "<script", "<link"):
        assert external not in page, external
    assert re.findall(r"url\((?!#)", page) == []  # only references within the page


def test_draws_a_device_box_per_geop_and_a_host_box_per_reason(summary: GraphSummary) -> None:
    page = render_html(summary)
    assert len(re.findall(r'<rect class="device"', page)) == 1
    assert len(re.findall(r'<rect class="host[" ]', page)) == 4
    assert "GeOp1_0 (2 nodes)" in page
    assert "not_in_library (1 node)" in page
    assert "memcpy edges: 3" in page


def test_a_line_per_host_box_and_geop_pair_with_its_own_counts(summary: GraphSummary) -> None:
    page = render_html(summary)
    # GeOp1_0 reads py (not_in_library) and x (outside_geop), and feeds s (gray_op).
    labels = re.findall(r'text-anchor="end">(in \d+ / out \d+)<', page)
    assert sorted(labels) == ["in 0 / out 1", "in 1 / out 0", "in 1 / out 0"]
    assert len(re.findall(r'<line class="edge"', page)) == 3


def test_a_geop_feeding_another_gets_an_arc(make_run: Callable[..., EngineRun]) -> None:
    run = make_run()
    graph = run.graph
    graph["s"].meta[CLUSTER] = "GeOp1_1"
    graph.meta[CLUSTERS] = [*graph.meta[CLUSTERS], Cluster("GeOp1_1", ("s",), ("relu",), ())]
    page = render_html(summarize(run))
    assert page.count('marker-end="url(#arrow)"') == 1
    assert ">1 from GeOp1_0<" in page


def test_errors_and_warnings_come_first(summary: GraphSummary) -> None:
    page = render_html(summary)
    assert "<h2>Errors and warnings (1 error, 1 warning)</h2>" in page
    assert page.index("Errors and warnings") < page.index("<h2>Partition</h2>")
    assert '<td><span class="error">error</span></td><td>table_split</td>' in page


def test_has_the_tables(summary: GraphSummary) -> None:
    page = render_html(summary)
    for heading in ("<h2>GeOps</h2>", "<h2>Host ops (4)</h2>",
                    "<h2>Precision (2 user ops judged, 1 in a lower dtype; casts inserted: 2)"
                    "</h2>",
                    "<h2>Fusions (1 applied)</h2>", "<h2>Fusion instances (1)</h2>",
                    "<h2>Options without effect here</h2>"):  # fmt: skip
        assert heading in page, heading
    # by the user's op names (not the float16 clone mm_orig/_tf2npu_fp16), GE types, reasons
    assert "<td>mm_orig</td><td>MatMulV2</td><td>float16</td><td>allow list</td><td></td>" in page
    assert "<td>relu</td><td>Relu</td><td>float32</td><td>deny list</td>" in page
    assert '<td>float16</td><td>allow list</td><td class="n">1</td><td>MatMulV2 x1</td>' in page
    assert "_tf2npu_fp16</td>" not in page
    assert '<td>gelu</td><td class="n">0</td>' in page
    assert "<td>matmul_biasadd</td><td>relu</td><td>relu, mm_orig</td>" in page
    assert "<td>PyFunc: not in the device op library</td>" in page


def test_names_are_escaped_and_many_geops_are_summed(make_run: Callable[..., EngineRun]) -> None:
    run = make_run()
    run.graph.meta[CLUSTERS] = [
        Cluster(f"GeOp<{i}>", (f"n{i}",), (), ()) for i in range(BOXES_DRAWN + 5)
    ]
    page = render_html(summarize(run))
    assert "GeOp&lt;0&gt; (1 node)" in page and "GeOp<0>" not in page
    assert len(re.findall(r'<rect class="device"', page)) == BOXES_DRAWN
    assert "6 more GeOps (6 nodes)" in page


def test_the_box_of_the_failing_node_is_marked(summary: GraphSummary) -> None:
    page = render_html(summary)
    # the table_split error is at s, a gray op on the host: its box, and only it, is red
    assert len(re.findall(r'<rect class="host failing"', page)) == 1
    assert '<text class="failing-label"' in page and "✖ s: table_split" in page
    marked = page.index('<rect class="host failing"')
    assert page.rindex("<rect", 0, page.index("✖ s: table_split")) == marked
    assert "gray_op (1 node)" in page[marked : page.index("✖ s: table_split")]


def test_without_errors_no_box_is_marked(summary: GraphSummary) -> None:
    page = render_html(dataclasses.replace(summary, errors=()))
    body = page.split("</style>", 1)[1]
    assert "failing" not in body and "✖" not in body


def test_the_crossing_tensors_are_listed_with_their_ends(summary: GraphSummary) -> None:
    page = render_html(summary)
    section = page[page.index("<h2>Tensors crossing") : page.index("<h2>Host ops")]
    assert "(3; 3 memcpy edges: one per op input reading one)" in section
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>", section)
    assert rows == [("py", "not_in_library", "GeOp1_0"), ("x", "outside_geop", "GeOp1_0"),
                    ("relu", "GeOp1_0", "gray_op")]  # fmt: skip


def test_pass_made_names_show_the_users_ops_with_the_internal_name_a_click_away(
    make_run: Callable[..., EngineRun],
) -> None:
    run = make_run()
    graph = run.graph
    cast = graph.add_node("relu/_tf2npu_fp16/_tf2npu_to_f32", "Cast", [graph["relu"].output()],
                          origin=["relu/_tf2npu_fp16"])  # fmt: skip
    graph.add_node("relu/_tf2npu_fp16", "Relu", origin=["relu"])
    cast.meta[PLACEMENT] = Placement(False, 1, "not_in_library", "Cast: not here")
    reader = graph.add_node("cast_str", "AsString", [cast.output()])
    reader.meta[PLACEMENT] = Placement(False, 2, "gray_op", "AsString: gray op")
    page = render_html(summarize(run))
    hosts = page[page.index("<h2>Host ops") : page.index("<h2>Precision")].replace("<wbr>", "")
    assert (
        '<td><details class="name"><summary>relu</summary>'
        "<code>relu/_tf2npu_fp16/_tf2npu_to_f32</code></details></td><td>Cast</td>"
    ) in hosts
    assert "<td>cast_str</td>" in hosts  # the user's own names as they are
