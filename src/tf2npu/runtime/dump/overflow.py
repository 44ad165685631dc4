"""Overflow detection for ``enable_dump_debug``: which op overflowed, and its ``Opdebug`` record.

The CPU has no saturation mode: where the 910 would saturate a float16 output, Inf appears here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts import gegraph
from tf2npu.runtime.dump.select import DumpModel, DumpTensor
from tf2npu.runtime.dump.writer import DumpWriter
from tf2npu.runtime.errors import first_created_at

_FP16_MAX = 65504.0
_STATUS_FLOAT_OVERFLOW = 0x20
_STATUS_FP16_CONVERSION = 0x100


def check_overflow(
    writer: DumpWriter, model: DumpModel, step: int, values: Sequence[Any], stamp: int, client: Any
) -> None:
    """Record every op of ``model`` that overflowed in this step (inputs finite, output not)."""
    by_task: dict[int, list[DumpTensor]] = {}
    for tensor in model.tensors:
        by_task.setdefault(tensor.task, []).append(tensor)
    for task, tensors in by_task.items():
        inputs = [values[t.fetch] for t in tensors if t.kind == "input"]
        outputs = [(t, values[t.fetch]) for t in tensors if t.kind == "output"]
        if not all(_finite(v) for v in inputs):
            continue
        bad = [(t, v) for t, v in outputs if _overflowed(v)]
        if not bad:
            continue
        if not model.graph_written:
            writer.put_graph(model, [np.shape(v) for v in values])
        op = model.graph.ops[task]
        record = opdebug_record(model, op, step, bad[0][1], first_created_at(client, op.origins))
        writer.put_overflow(model, step, tensors, values, stamp + task, record)


def _finite(value: Any) -> bool:
    array = np.asarray(value)
    return array.dtype.kind != "f" or bool(np.isfinite(array).all())


def _overflowed(value: Any) -> bool:
    array = np.asarray(value)
    if array.dtype.kind != "f":
        return False
    if not np.isfinite(array).all():
        return True
    return array.dtype == np.float16 and array.size > 0 and float(np.abs(array).max()) >= _FP16_MAX


def opdebug_record(
    model: DumpModel, op: gegraph.GeOp, step: int, value: Any, where: str
) -> dict[str, Any]:
    array = np.asarray(value)
    saturated = bool(np.isfinite(array).all())
    fp16_cast = op.type == "Cast" and array.dtype == np.float16
    status = _STATUS_FP16_CONVERSION if fp16_cast else _STATUS_FLOAT_OVERFLOW
    return {
        "AI Core": {
            "status": status,
            "task_id": op.id,
            "stream_id": 0,
            "model_id": model.model_id,
            "step": step,
            "op_name": op.name,
            "op_type": op.type,
            "origin": list(op.origins),
            "created_at": where,
            "kind": "saturation" if saturated else "inf_nan",
            "dtype": dumpfile.ge_dtype(array.dtype),
        }
    }
