"""The literal dump trees the compare tests and benchmark are built on: the writer's raw form."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import find_step_dirs, load_nano_tensor, read_nano
from tf2npu.artifacts.gegraph import GeOp, TensorDesc
from tf2npu.testing.dumptrees import (
    graph_json_path,
    npu_step_dir,
    write_dense_golden,
    write_fused_npu,
    write_npu,
    write_unfused_npu,
)

FILES = [
    "Cast.x_cast.1.0.1700000000000000",
    "Data.x.0.0.1700000000000000",
    "FusedMatMul.dense_fused.2.0.1700000000000000",
    "Relu.dense_Relu.3.0.1700000000000000",
]


@pytest.mark.parametrize(
    ("mode", "files", "sides"),
    [
        ("output", FILES, (0, 1)),
        ("input", [f for f in FILES if not f.startswith("Data.")], (1, 0)),
        ("all", FILES, (1, 1)),
    ],
)
def test_the_fused_npu_tree_is_one_raw_file_per_op_by_the_dump_mode(
    tmp_path: Path, mode: str, files: list[str], sides: tuple[int, int]
) -> None:
    folder = write_fused_npu(tmp_path, mode=mode, fused=[[4.0, -0.5]])
    assert sorted(p.name for p in folder.iterdir()) == files
    relu = read_nano(folder / "Relu.dense_Relu.3.0.1700000000000000")
    assert (len(relu.inputs), len(relu.outputs)) == sides
    [step] = find_step_dirs(tmp_path)
    assert (step.model_name, step.model_id, step.step) == ("GeOp1_0_1", 1, 0)
    assert step.graph_json == tmp_path / "graph" / "20260101120000" / "GeOp1_0_1.json"
    [graph] = gegraph.load(step.graph_json)
    assert graph.name == "GeOp1_0_1"
    assert [op.name for op in graph.ops] == ["x", "x_cast", "dense/fused", "dense/Relu"]
    if mode != "input":
        out = load_nano_tensor(folder / files[-1], "output", 0)
        assert (out.dtype, out.tolist()) == (np.float16, [[4.0, 0.0]])


def test_the_fused_output_carries_its_user_tensor_in_the_raw_header(tmp_path: Path) -> None:
    folder = write_fused_npu(tmp_path)
    fused = read_nano(folder / FILES[2]).outputs[0]
    relu = read_nano(folder / FILES[3]).outputs[0]
    assert (fused.origin_name, fused.origin_index) == ("dense/BiasAdd", 0)
    assert (relu.origin_name, relu.origin_index) == ("dense/Relu", 0)  # the op's own


def test_a_gap_in_the_given_tensors_is_written_absent(tmp_path: Path) -> None:
    step = npu_step_dir(tmp_path, model_name="GeOp2_0_7", model_id=7, step=3)
    op = GeOp("add", "Add", 5, ("a:0", "b:0"), output_desc=(TensorDesc("DT_FLOAT"),))
    path = write_npu(step, op, {("input", 1): [2.0], ("output", 0): np.float32([3.0])})
    assert path.relative_to(tmp_path).as_posix() == (
        "20260101120000/0/GeOp2_0_7/7/3/Add.add.5.0.1700000000000000"
    )
    raw = read_nano(path)
    assert [t.absent for t in raw.inputs] == [True, False]
    assert list(raw.present()) == [("input", 1), ("output", 0)]
    assert load_nano_tensor(path, "input", 1).tolist() == [2.0]
    assert graph_json_path(step) == tmp_path / "graph" / "20260101120000" / "GeOp2_0_7.json"


def test_the_unfused_and_golden_trees(tmp_path: Path) -> None:
    folder = write_unfused_npu(tmp_path / "off")
    assert sorted(p.name.split(".")[1] for p in folder.iterdir()) == [
        "dense_BiasAdd", "dense_MatMul", "dense_Relu", "x", "x_cast",
    ]  # fmt: skip
    matmul = next(folder.glob("MatMul.*"))
    assert load_nano_tensor(matmul, "output", 0).tolist() == [[3.0, -1.0]]
    golden = write_dense_golden(tmp_path / "golden", step=None)
    assert sorted(p.name for p in golden.iterdir()) == [
        "dense_BiasAdd.0.1700000000000002.npy",
        "dense_MatMul.0.1700000000000001.npy",
        "dense_Relu.0.1700000000000003.npy",
        "x.0.1700000000000000.npy",
    ]
