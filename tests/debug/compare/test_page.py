"""The compare page from literal dump trees: the first divergent op with its fusion pass, its
inputs and outputs side by side, the tensors in execution order, the metrics drawn."""

from __future__ import annotations

import re
from pathlib import Path

from tf2npu.debug.compare.metrics import select_algorithms
from tf2npu.debug.compare.page import render_page, write_page
from tf2npu.debug.compare.trees import compare_trees
from tf2npu.testing.dumptrees import write_dense_golden, write_fused_npu


def _report(tmp_path: Path, fused: object = ((4.0, -0.5),), algorithms: str = "all") -> object:
    write_fused_npu(tmp_path / "npu", fused=[list(r) for r in fused], mode="all")  # type: ignore[attr-defined]
    write_dense_golden(tmp_path / "golden")
    return compare_trees(
        tmp_path / "npu", tmp_path / "golden", algorithms=select_algorithms(algorithms)
    )


def _section(page: str, heading: str) -> str:
    start = page.index(f"<h2>{heading}")
    end = page.find("<h2>", start + 1)
    return page[start : end if end > 0 else None]


def test_the_first_divergent_op_is_named_with_its_fusion_pass(tmp_path: Path) -> None:
    page = render_page(_report(tmp_path))  # type: ignore[arg-type]
    assert "<title>tf2npu compare: 3 fail</title>" in page
    first = _section(page, "First divergent op")
    assert '<b class="error">dense/<wbr>fused</b> (FusedMatMul), index 2' in first
    assert "user ops dense/<wbr>MatMul, dense/<wbr>BiasAdd" in first
    assert 'made by fusion pass <b class="warning">MatMulBiasAddFusionPass</b>' in first
    inputs, outputs = re.findall(r"<h3>(Inputs|Outputs) \((\d+)\)</h3>", first)
    assert inputs == ("Inputs", "1") and outputs == ("Outputs", "1")
    assert '<tr><td class="n">0</td><td>dense/<wbr>fused:<wbr>input:0</td><td>pass</td>' in first
    assert (
        '<tr class="fail"><td class="n">0</td><td>dense/<wbr>fused:<wbr>output:0</td><td>fail</td>'
        in first
    )
    assert "1 of 2 elements outside 0.01 + 0.01·|truth| (float16 default)" in first


def test_tensors_in_execution_order_with_the_first_op_highlighted(tmp_path: Path) -> None:
    page = render_page(_report(tmp_path))  # type: ignore[arg-type]
    tensors = _section(page, "Tensors in execution order")
    rows = re.findall(r'<tr( class="\w+")?><td class="n">(\d+)</td><td>(\w+)</td>', tensors)
    assert [(css, index, op) for css, index, op in rows] == [
        ("", "0", "Data"), ("", "1", "Cast"), ("", "1", "Cast"),
        (' class="first"', "2", "FusedMatMul"), (' class="first"', "2", "FusedMatMul"),
        (' class="fail"', "3", "Relu"), (' class="fail"', "3", "Relu"),
    ]  # fmt: skip
    text = re.sub(r"<span[^>]*>|</span>", "", tensors)
    assert '<td class="n">0.465 &gt; 0.01</td>' in text and "0 &lt;= 0.01" in text
    charts = re.findall(r'aria-label="([^"]*)"', tensors)
    assert charts == [
        "Cosine similarity of each output tensor",
        "Error measures of each output tensor",
    ]
    assert tensors.count("first divergent op: dense/fused") == 4  # label and tooltip, two charts
    assert "Also computed, in the CSV: AccumulatedRelativeError" in tensors


def test_chosen_algorithms_decide_the_columns_and_charts(tmp_path: Path) -> None:
    page = render_page(_report(tmp_path, algorithms="1"))  # type: ignore[arg-type]
    assert "Cosine similarity" not in page and "Error measures of each output tensor" in page
    assert "<th>MaxAbsErr</th>" in page and "<th>Cosine</th>" not in page
    assert "Also computed" not in page


def test_dumps_that_agree_say_none(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu")
    write_dense_golden(tmp_path / "golden")
    page = render_page(compare_trees(tmp_path / "npu", tmp_path / "golden"))
    assert "<title>tf2npu compare: agree</title>" in page
    assert '<p class="note">none: no tensor fails</p>' in page
    assert "first divergent op:" not in page


def test_write_page_writes_the_file_with_the_csvs_listed(tmp_path: Path) -> None:
    path = write_page(_report(tmp_path), tmp_path / "c.html", [tmp_path / "r.csv"])  # type: ignore[arg-type]
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "r.<wbr>csv" in text


def test_an_op_with_no_dumped_tensor_shows_its_name_and_empty_cells() -> None:
    from tf2npu.debug.compare.page import _missing, _tensor

    assert _tensor("NaN", "hidden1/kernel") == "hidden1/kernel"
    assert _tensor("dense/fused:output:0", "dense/fused") == "dense/fused:output:0"
    assert [_missing(t) for t in ("NaN", " NaN", "NaN NaN", "[2] int32", "1.0")] == [
        "", "", "", "[2] int32", "1.0",
    ]  # fmt: skip
