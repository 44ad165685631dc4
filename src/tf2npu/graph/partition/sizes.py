"""Bytes of one output tensor, when its dtype and fully known shape can be read off the node.

Shapes come from the ``_output_shapes`` attr TF writes with ``add_shapes=True`` (one
``TensorShapeProto`` per flat output), else from a ``Placeholder``'s ``shape`` or a ``Const``'s
``value``; dtypes from the op's output layout, else a ``dtype`` attr. An unknown rank, a ``-1``
dimension or a dtype without a fixed width (string, resource, variant) means *unknown*.
"""

from __future__ import annotations

import math
from typing import Any

from tf2npu.dtypes import DTYPES, base_dtype
from tf2npu.graph._opdef import flat_dtypes, output_layout
from tf2npu.graph.ir import Node

__all__ = ["DTYPE_BYTES", "output_dtype", "output_shape", "tensor_bytes"]

DTYPE_BYTES: dict[int, int] = {n: d.itemsize for n, d in DTYPES.items() if d.itemsize}
"""Bytes per element by ``DataType`` value (ref types are these plus 100)."""


def tensor_bytes(node: Node, index: int) -> int | None:
    """Bytes of output ``index`` of ``node`` per step, or ``None`` when not known."""
    shape = output_shape(node, index)
    if shape is None:  # checked first: reading the dtype may import TensorFlow's registry
        return None
    dtype = output_dtype(node, index)
    if dtype is None:
        return None
    width = DTYPE_BYTES.get(base_dtype(dtype))
    return None if width is None else width * math.prod(shape)


def output_shape(node: Node, index: int) -> tuple[int, ...] | None:
    """The fully known shape of output ``index``, or ``None``."""
    shapes = node.attrs.get("_output_shapes")
    if shapes is not None:
        listed = shapes.list.shape
        return _dims(listed[index]) if index < len(listed) else None
    if index != 0:
        return None
    if node.op in ("Placeholder", "PlaceholderWithDefault") and "shape" in node.attrs:
        return _dims(node.attrs["shape"].shape)
    if node.op == "Const" and "value" in node.attrs:
        return _dims(node.attrs["value"].tensor.tensor_shape)
    return None


def _dims(shape: Any) -> tuple[int, ...] | None:
    if shape.unknown_rank:
        return None
    dims = tuple(int(d.size) for d in shape.dim)
    return None if any(d < 0 for d in dims) else dims


def output_dtype(node: Node, index: int) -> int | None:
    layout = output_layout(node)
    if layout is not None:
        dtypes = flat_dtypes(layout)
        if index < len(dtypes):
            return dtypes[index]
        return None
    attr = node.attrs.get("dtype")
    return int(attr.type) if attr is not None and attr.type else None
