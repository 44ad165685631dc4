"""Dump trees written literally, for tests and benchmarks of ``tf2npu compare`` (TF-free).

The layout and names are those of :mod:`tf2npu.artifacts.dump` (what ``tf2npu run`` writes):
one raw file per op (inputs and outputs together, the TLV layout msaccucmp parses), the model's
graph JSON under ``<root>/graph/<time>/<model_name>.json``, golden tensors as ``.npy``.

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> step = npu_step_dir(root / "npu")
>>> step.relative_to(root).as_posix()
'npu/20260101120000/0/GeOp1_0_1/1/0'
>>> write_npu(step, GeOp("dense/MatMul", "MatMul", 3), {("output", 0): np.ones(2)}).name
'MatMul.dense_MatMul.3.0.1700000000000000'
>>> graph_json_path(step).relative_to(root).as_posix()
'npu/graph/20260101120000/GeOp1_0_1.json'
>>> write_golden(root / "golden" / "0", "dense/MatMul", 0, np.ones(2)).name
'dense_MatMul.0.1700000000000000.npy'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import (
    NpuFileName,
    golden_name,
    model_graph_json,
    sanitize,
    write_nano,
)
from tf2npu.artifacts.gegraph import GeGraph, GeOp, TensorDesc

__all__ = [
    "BIAS_ADD",
    "MATMUL",
    "RELU",
    "TIME",
    "TS",
    "X",
    "fused_ops",
    "graph_json_path",
    "npu_step_dir",
    "unfused_ops",
    "write_dense_golden",
    "write_fused_npu",
    "write_golden",
    "write_graph",
    "write_npu",
    "write_unfused_npu",
]

TIME = "20260101120000"
TS = 1700000000000000


def npu_step_dir(
    root: Path,
    *,
    model_name: str = "GeOp1_0_1",
    model_id: int = 1,
    device_id: int = 0,
    step: int = 0,
    time: str = TIME,
) -> Path:
    """``root/time/device_id/model_name/model_id/step``, created."""
    path = root / time / str(device_id) / model_name / str(model_id) / str(step)
    path.mkdir(parents=True, exist_ok=True)
    return path


def graph_json_path(step_dir: Path) -> Path:
    """Where the graph JSON of the model ``step_dir`` (``.../time/device/model/id/step``)
    belongs: ``<root>/graph/<time>/<model_name>.json``, as the writer puts it."""
    parts = step_dir.parts
    return model_graph_json(Path(*parts[:-5]), parts[-5], parts[-3])


def write_graph(step_dir: Path, ops: Sequence[GeOp]) -> Path:
    """The model's graph JSON where the writer puts it (:func:`graph_json_path`); the graph is
    named by the model (the step folder's grandparent)."""
    path = graph_json_path(step_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    gegraph.dump(GeGraph(step_dir.parent.parent.name, tuple(ops)), path)
    return path


def write_npu(
    step_dir: Path,
    op: GeOp,
    tensors: Mapping[tuple[Literal["input", "output"], int], Any],
    *,
    ts: int = TS,
) -> Path:
    """Write ``op``'s tensors as one raw file (task id = ``op.id``), inputs and outputs by
    index; a position below the highest given one that is not given is written absent (as the
    writer does with a tensor it cannot take). The header's origin of output ``i`` is
    ``op.output_desc[i]``'s, else the op's last user op (the writer's rule). The file's path."""
    given: dict[tuple[str, int], Any] = {k: np.asarray(v) for k, v in tensors.items()}
    sides: dict[str, list[Any]] = {}
    for kind in ("input", "output"):
        count = 1 + max((i for k, i in given if k == kind), default=-1)
        sides[kind] = [given.get((kind, i)) for i in range(count)]
    origins = [  # the writer's rule: the desc's origin, else the op's last user op
        (d.origin_name, i if d.origin_index is None else d.origin_index)
        if d.origin_name is not None
        else (op.origins[-1], i)
        for i, d in enumerate(op.output_desc)
    ]
    path = step_dir / NpuFileName(op.type, sanitize(op.name), op.id, 0, ts).base
    write_nano(path, sides["input"], sides["output"], origins)
    return path


def write_golden(folder: Path, op_name: str, index: int, array: Any, *, ts: int = TS) -> Path:
    """Save one golden tensor (``op_name`` as the user wrote it, ``/`` kept)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / golden_name(op_name, index, ts)
    np.save(path, np.asarray(array))
    return path


# -- a fused dense layer, dumped three ways --------------------------------------------------

X = [[1.0, 2.0]]
"""The input."""
MATMUL = [[3.0, -1.0]]
"""``dense/MatMul`` (x times a constant weight, not dumped)."""
BIAS_ADD = [[3.5, -0.5]]
"""``dense/BiasAdd`` (bias [0.5, 0.5])."""
RELU = [[3.5, 0.0]]
"""``dense/Relu``."""


def fused_ops() -> list[GeOp]:
    """The NPU graph with fusion on, in float16: ``x`` (Data) -> ``x_cast`` (Cast to float16)
    -> ``dense/fused`` (MatMul + BiasAdd fused; its output carries ``dense/BiasAdd:0``) ->
    ``dense/Relu``."""
    f32 = TensorDesc("DT_FLOAT", (1, 2))
    f16 = TensorDesc("DT_FLOAT16", (1, 2))
    return [
        GeOp("x", "Data", 0, (), output_desc=(f32,)),
        GeOp("x_cast", "Cast", 1, ("x:0",), (f32,), (f16,)),
        GeOp(
            "dense/fused", "FusedMatMul", 2, ("x_cast:0", "x:-1"), (f16,),
            (TensorDesc("DT_FLOAT16", (1, 2), "dense/BiasAdd", 0),),
            ("dense/MatMul", "dense/BiasAdd"), "MatMulBiasAddFusionPass",
        ),
        GeOp("dense/Relu", "Relu", 3, ("dense/fused:0",), (f16,), (f16,)),
    ]  # fmt: skip


def unfused_ops() -> list[GeOp]:
    """The same graph with fusion off: MatMul and BiasAdd are ops of their own."""
    x, cast, _, _ = fused_ops()
    f16 = TensorDesc("DT_FLOAT16", (1, 2))
    return [
        x,
        cast,
        GeOp("dense/MatMul", "MatMul", 2, ("x_cast:0",), (f16,), (f16,)),
        GeOp("dense/BiasAdd", "BiasAdd", 3, ("dense/MatMul:0",), (f16,), (f16,)),
        GeOp("dense/Relu", "Relu", 4, ("dense/BiasAdd:0",), (f16,), (f16,)),
    ]


def write_fused_npu(root: Path, *, fused: Any = BIAS_ADD, mode: str = "all", step: int = 0) -> Path:
    """The fusion-on NPU dump of the dense layer (float16) under ``root``, with its graph
    JSON; ``fused`` is what the fused op outputs (``BIAS_ADD`` when it is right), the ReLU
    follows from it. ``mode`` is ``dump_mode``: ``output``, ``input`` or ``all``. The step
    folder."""
    folder = npu_step_dir(root, step=step)
    ops = fused_ops()
    write_graph(folder, ops)
    x16 = np.asarray(X, np.float16)
    out = np.asarray(fused, np.float16)
    relu = np.maximum(out, np.float16(0))
    values = {
        "x": ((), np.asarray(X, np.float32)),
        "x_cast": ((np.asarray(X, np.float32),), x16),
        "dense/fused": ((x16,), out),
        "dense/Relu": ((out,), relu),
    }
    for op in ops:
        inputs, output = values[op.name]
        tensors: dict[tuple[Literal["input", "output"], int], Any] = {}
        if mode in ("input", "all"):
            tensors.update({("input", i): v for i, v in enumerate(inputs)})
        if mode in ("output", "all"):
            tensors[("output", 0)] = output
        if tensors:
            write_npu(folder, op, tensors)
    return folder


def write_unfused_npu(root: Path, *, step: int = 0) -> Path:
    """The fusion-off NPU dump of the dense layer (outputs only, float16, all correct)."""
    folder = npu_step_dir(root, step=step)
    ops = unfused_ops()
    write_graph(folder, ops)
    values = (X, X, MATMUL, BIAS_ADD, RELU)
    for op, value in zip(ops, values, strict=True):
        dtype = np.float32 if op.type == "Data" else np.float16
        write_npu(folder, op, {("output", 0): np.asarray(value, dtype)})
    return folder


def write_dense_golden(root: Path, *, step: int | None = 0) -> Path:
    """The golden (float32) dump of the dense layer: ``x``, ``dense/MatMul``,
    ``dense/BiasAdd``, ``dense/Relu``, output 0 each. The folder."""
    folder = root if step is None else root / str(step)
    for ts, (name, value) in enumerate(
        (("x", X), ("dense/MatMul", MATMUL), ("dense/BiasAdd", BIAS_ADD), ("dense/Relu", RELU))
    ):
        write_golden(folder, name, 0, np.asarray(value, np.float32), ts=TS + ts)
    return folder
