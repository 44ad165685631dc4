"""check_result.tf.json: the vendor layout, unsupported ops only, no file when all are supported."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tf2npu.graph.decisions import PLACEMENT, Placement
from tf2npu.graph.engine import EngineRun
from tf2npu.graph.report.check_result import (
    FILE_NAME,
    check_result,
    render_check_result,
    write_check_result,
)
from tf2npu.graph.report.summary import GraphSummary, summarize

TEXT = """{
  "op": [
    {
      "is_support": false,
      "name": "py",
      "not_support_reason": {
        "code": 1,
        "message": "PyFunc: not in the device op library"
      },
      "type": "PyFunc"
    },
    {
      "is_support": false,
      "name": "s",
      "not_support_reason": {
        "code": 2,
        "message": "AsString: gray op, host in mixed compute"
      },
      "type": "AsString"
    }
  ]
}"""


def test_lists_unsupported_ops_sorted_by_name_in_the_vendor_layout(summary: GraphSummary) -> None:
    # x (device-capable, outside the GeOp) and c (undecided) are supported: not listed.
    assert render_check_result(summary) == TEXT


def test_ops_are_sorted_by_node_name(make_run: Callable[..., EngineRun]) -> None:
    run = make_run()
    run.graph["c"].meta[PLACEMENT] = Placement(False, 4, "not_supported", "Const: no")
    data = check_result(summarize(run))
    assert data is not None
    assert [op["name"] for op in data["op"]] == ["c", "py", "s"]


def test_writes_the_file_and_removes_a_stale_one_when_all_is_supported(
    summary: GraphSummary, make_run: Callable[..., EngineRun], tmp_path: Path
) -> None:
    path = write_check_result(summary, tmp_path)
    assert path == tmp_path / FILE_NAME
    assert json.loads(path.read_text())["op"][0]["name"] == "py"
    run = make_run()
    for name in ("py", "s"):
        run.graph[name].meta[PLACEMENT] = Placement(True)
    all_supported = summarize(run)
    assert check_result(all_supported) is None
    assert write_check_result(all_supported, tmp_path) is None
    assert not (tmp_path / FILE_NAME).exists()
