"""The CSV (msaccucmp's columns, then ours) and the JSON report."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tf2npu.debug.compare.metrics import ALGORITHMS, select_algorithms
from tf2npu.debug.compare.report import (
    advisor_rows,
    csv_header,
    dumps,
    input_nodes,
    to_json,
    write_csvs,
)
from tf2npu.debug.compare.trees import compare_trees
from tf2npu.testing.dumptrees import (
    TS,
    npu_step_dir,
    write_dense_golden,
    write_fused_npu,
)

VENDOR = [
    "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType",
    "TensorIndex", "Shape",
]  # fmt: skip


def test_header_is_msaccucmps_then_ours() -> None:
    assert csv_header(ALGORITHMS, overflow_detection=False) == [
        *VENDOR,
        "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError",
        "RelativeEuclideanDistance", "KullbackLeiblerDivergence", "StandardDeviation",
        "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError", "MeanRelativeError",
        "CompareFailReason", "Verdict", "Reason", "RequiredTolerance",
    ]  # fmt: skip
    assert csv_header(select_algorithms("7,0"), overflow_detection=True) == [
        *VENDOR, "OverFlow", "RootMeanSquareError", "CosineSimilarity", "CompareFailReason",
        "Verdict", "Reason", "RequiredTolerance",
    ]  # fmt: skip


def test_rows_of_a_broken_fusion(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu", fused=[[4.0, -0.5]], mode="output")
    write_dense_golden(tmp_path / "golden")
    report = compare_trees(
        tmp_path / "npu", tmp_path / "golden", algorithms=select_algorithms("0,1"),
        overflow_detection=True,
    )  # fmt: skip
    [path] = write_csvs(report, tmp_path / "out", "20260101120000")
    assert path == tmp_path / "out" / "result_20260101120000.csv"
    with open(path, newline="", encoding="utf-8") as stream:
        lines = list(csv.reader(stream))
    assert lines[0] == csv_header(report.algorithms, True)
    assert lines[1:] == [
        ["0", "Data", "x", "float32", "NaN", "x", "float32", "x:output:0", "[1,2]", "NaN",
         "1.000000", "0.000000", "", "pass", "within 1e-05 + 0.0001·|truth| (float32 default)",
         "0.000e+00"],
        ["1", "Cast", "x_cast", "float16", "NaN", "x", "float32", "x_cast:output:0", "[1,2]",
         "NO", "1.000000", "0.000000", "", "pass", "within 0.01 + 0.01·|truth| (float16 default)",
         "0.000e+00"],
        ["2", "FusedMatMul", "dense/fused", "float16", "NaN", "dense/MatMul,dense/BiasAdd",
         "float32", "dense/fused:output:0", "[1,2]", "NO", "0.999846", "0.500000", "", "fail",
         "1 of 2 elements outside 0.01 + 0.01·|truth| (float16 default); worst at [0, 0]: 4 vs 3.5",
         "4.650e-01"],
        ["3", "Relu", "dense/Relu", "float16", "NaN", "dense/Relu", "float32",
         "dense/Relu:output:0", "[1,2]", "NO", "1.000000", "0.500000", "", "fail",
         "1 of 2 elements outside 0.01 + 0.01·|truth| (float16 default); worst at [0, 0]: 4 vs 3.5",
         "4.650e-01"],
    ]  # fmt: skip
    assert [r.index for r in advisor_rows(report)] == ["0", "1", "2", "3"]
    assert input_nodes(report) == ["x"]


def test_unmatched_rows_write_star_and_nan(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu", mode="output")
    golden = write_dense_golden(tmp_path / "golden")
    (golden / f"dense_Relu.0.{TS + 3}.npy").unlink()
    report = compare_trees(tmp_path / "npu", tmp_path / "golden", algorithms=["CosineSimilarity"])
    [path] = write_csvs(report, tmp_path, "x")
    last = list(csv.reader(path.open(newline="", encoding="utf-8")))[-1]
    assert last == [
        "3", "Relu", "dense/Relu", "float16", "NaN", "*", "NaN", "dense/Relu:output:0",
        "[1,2]", "NaN",
        "[dense/Relu] There is no the ground truth dump file for dense/Relu:output:0.",
        "unmatched", "no counterpart in the second tree", "NaN",
    ]  # fmt: skip


def test_several_units_get_msaccucmps_batch_names(tmp_path: Path) -> None:
    first = write_fused_npu(tmp_path / "npu", mode="output")
    other = npu_step_dir(tmp_path / "npu", model_name="GeOp2_0_2", model_id=2)
    for path in first.iterdir():
        (other / path.name).write_bytes(path.read_bytes())
    write_dense_golden(tmp_path / "golden")
    report = compare_trees(tmp_path / "npu", tmp_path / "golden")
    paths = write_csvs(report, tmp_path / "out", "T")
    assert [p.name for p in paths] == ["0_GeOp1_0_1_0_result_T.csv", "0_GeOp2_0_2_0_result_T.csv"]


def test_two_models_of_one_geop_get_their_model_id_in_the_name(tmp_path: Path) -> None:
    """Two run signatures executing GeOp1_0 are two models: the names must not collide, even
    in an older dump that named both models by the GeOp alone."""
    built = write_fused_npu(tmp_path / "built", mode="output")
    for model_id in (1, 2):
        folder = npu_step_dir(tmp_path / "npu", model_name="GeOp1_0", model_id=model_id)
        for path in built.iterdir():
            (folder / path.name).write_bytes(path.read_bytes())
    write_dense_golden(tmp_path / "golden")
    report = compare_trees(tmp_path / "npu", tmp_path / "golden")
    paths = write_csvs(report, tmp_path / "out", "T")
    assert [p.name for p in paths] == [
        "0_GeOp1_0_1_0_result_T.csv",
        "0_GeOp1_0_2_0_result_T.csv",
    ]


def test_json_report(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu", fused=[[4.0, -0.5]], mode="output")
    write_dense_golden(tmp_path / "golden")
    report = compare_trees(
        tmp_path / "npu", tmp_path / "golden", algorithms=["StandardDeviation", "CosineSimilarity"]
    )
    data = json.loads(dumps(to_json(report, [tmp_path / "r.csv"])))
    assert data["schema"] == "tf2npu.compare/1"
    assert data["mode"] == "npu-vs-golden"
    assert data["totals"] == {"pass": 2, "fail": 2, "unmatched": 0, "error": 0, "compared": 4}
    assert data["csv"] == [str(tmp_path / "r.csv")]
    assert data["advisor"] is None
    first = data["first_divergence"]
    assert first["pass_name"] == "MatMulBiasAddFusionPass"
    assert {k: first[k] for k in ("unit", "index", "op", "op_type", "user_ops", "inputs_agree")} == {
        "unit": "0_GeOp1_0_1_0", "index": 2, "op": "dense/fused", "op_type": "FusedMatMul",
        "user_ops": ["dense/MatMul", "dense/BiasAdd"], "inputs_agree": 1,
    }  # fmt: skip
    tensor = first["failed"][0]
    assert tensor["metrics"] == {
        "StandardDeviation": "(1.750;2.250),(1.500;2.000)",
        "CosineSimilarity": 0.9998461420100133,
    }
    assert tensor["tolerance"] == {"atol": 0.01, "rtol": 0.01, "source": "float16 default"}
    assert tensor["required_tolerance"] == pytest.approx(0.5 - 0.01 * 3.5)
    assert (tensor["judged_as"], tensor["verdict"], tensor["overflow"]) == ("float16", "fail", None)
    assert tensor["npu_dump"] == ["dense/fused"]
    assert tensor["ground_truth"] == ["dense/MatMul", "dense/BiasAdd"]
    assert [d["op"] for d in data["divergences"]] == ["dense/fused"]
    assert [len(u["tensors"]) for u in data["units"]] == [4]
    assert data["units"][0]["csv"] == str(tmp_path / "r.csv")
