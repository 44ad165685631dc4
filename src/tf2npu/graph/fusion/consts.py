"""Read the values of small ``Const`` nodes without TensorFlow (patterns check their scalars).

Fusion patterns recognise a subgraph partly by its constants (gelu's 0.044715, an axis of -1),
so the matcher reads the ``TensorProto`` in a Const's ``value`` attr directly: the typed repeated
fields TF writes for scalars, or the packed ``tensor_content`` it writes for larger tensors.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from tf2npu.dtypes import DT_DOUBLE, DT_FLOAT, DT_HALF, DT_INT32, DT_INT64
from tf2npu.graph.ir import Node

__all__ = ["const_values", "scalar_like", "scalar_value"]

# DataType enum -> (repeated field holding values, struct format of one packed element).
_FIELDS: dict[int, tuple[str, str]] = {
    DT_FLOAT: ("float_val", "f"),
    DT_DOUBLE: ("double_val", "d"),
    DT_INT32: ("int_val", "i"),
    DT_INT64: ("int64_val", "q"),
    DT_HALF: ("half_val", "e"),  # half_val holds the 16-bit patterns
}
#: Larger constants are not pattern constants; reading them would cost time for nothing.
_MAX_ELEMENTS = 64


def const_values(node: Node) -> list[float] | None:
    """A ``Const``'s elements as floats (flattened), or ``None`` if unreadable or too large."""
    if node.op != "Const":
        return None
    proto: Any = node.attrs.get("value")
    tensor = getattr(proto, "tensor", None)
    if tensor is None or tensor.dtype not in _FIELDS:
        return None
    count = math.prod(d.size for d in tensor.tensor_shape.dim)
    if count > _MAX_ELEMENTS:
        return None
    if count == 0:
        return []
    field, fmt = _FIELDS[tensor.dtype]
    if tensor.tensor_content:
        size = struct.calcsize(fmt)
        if len(tensor.tensor_content) != size * count:
            return None
        return [float(v) for v in struct.unpack(f"<{count}{fmt}", tensor.tensor_content)]
    raw = list(getattr(tensor, field))
    if tensor.dtype == DT_HALF:
        raw = [struct.unpack("<e", struct.pack("<H", bits))[0] for bits in raw]
    if not raw:
        raw = [0]  # TF omits the field for an all-zero constant
    values = [float(v) for v in raw]
    if len(values) < count:  # TF repeats the last value to fill the shape
        values += [values[-1]] * (count - len(values))
    return values[:count]


def scalar_value(node: Node) -> float | None:
    """The value of a Const holding one element (any rank), else ``None``."""
    values = const_values(node)
    return values[0] if values is not None and len(values) == 1 else None


def scalar_like(value_attr: Any, number: float) -> Any:
    """A copy of a scalar Const's ``value`` attr holding ``number`` instead (same dtype).

    Fused ops sometimes need a constant the graph does not hold (dropout's keep probability
    where the graph holds the rate); deriving it from a Const of the same dtype keeps the
    proto classes of the graph.
    """
    copy = type(value_attr)()
    copy.CopyFrom(value_attr)
    tensor = copy.tensor
    field, _ = _FIELDS[tensor.dtype]
    tensor.ClearField("tensor_content")
    tensor.ClearField(field)
    tensor.ClearField("tensor_shape")
    if tensor.dtype == DT_HALF:
        tensor.half_val.append(struct.unpack("<H", struct.pack("<e", number))[0])
    else:
        getattr(tensor, field).append(number)
    return copy
