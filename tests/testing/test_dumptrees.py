"""The literal dump trees the compare tests and benchmark are built on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import find_step_dirs
from tf2npu.testing.dumptrees import (
    write_dense_golden,
    write_fused_npu,
    write_unfused_npu,
)


@pytest.mark.parametrize(
    ("mode", "files"),
    [
        ("output", ["Cast.x_cast.1.0.1700000000000000.output.0.npy",
                    "Data.x.0.0.1700000000000000.output.0.npy",
                    "FusedMatMul.dense_fused.2.0.1700000000000000.output.0.npy",
                    "Relu.dense_Relu.3.0.1700000000000000.output.0.npy"]),
        ("input", ["Cast.x_cast.1.0.1700000000000000.input.0.npy",
                   "FusedMatMul.dense_fused.2.0.1700000000000000.input.0.npy",
                   "Relu.dense_Relu.3.0.1700000000000000.input.0.npy"]),
    ],
)  # fmt: skip
def test_the_fused_npu_tree_honours_the_dump_mode(tmp_path: Path, mode, files) -> None:
    folder = write_fused_npu(tmp_path, mode=mode, fused=[[4.0, -0.5]])
    assert sorted(p.name for p in folder.iterdir()) == files
    [step] = find_step_dirs(tmp_path)
    assert (step.model_name, step.model_id, step.step) == ("GeOp1_0", 1, 0)
    [graph] = gegraph.load(step.graph_json)
    assert [op.name for op in graph.ops] == ["x", "x_cast", "dense/fused", "dense/Relu"]
    if mode == "output":
        relu = np.load(folder / files[-1])
        assert (relu.dtype, relu.tolist()) == (np.float16, [[4.0, 0.0]])


def test_the_unfused_and_golden_trees(tmp_path: Path) -> None:
    folder = write_unfused_npu(tmp_path / "off")
    assert len(list(folder.glob("*.npy"))) == 5
    golden = write_dense_golden(tmp_path / "golden", step=None)
    assert sorted(p.name for p in golden.iterdir()) == [
        "dense_BiasAdd.0.1700000000000002.npy",
        "dense_MatMul.0.1700000000000001.npy",
        "dense_Relu.0.1700000000000003.npy",
        "x.0.1700000000000000.npy",
    ]
