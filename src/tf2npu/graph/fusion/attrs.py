"""Build the ``AttrValue`` protos of fused nodes.

Node attrs in the IR are TF's ``AttrValue`` messages. A fused node copies most of them from the
nodes it replaces and needs a few new ones (``fused_ops``, ``num_args``); this module makes those
with the message class of the matched nodes' own attrs, so building a fused node does not import
TensorFlow when the graph already came from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tf2npu.graph.ir import Node

__all__ = ["CONV2D_ATTRS", "AttrFactory", "fused_ops"]


class AttrFactory:
    """Makes ``AttrValue`` messages of the same class as the attrs of ``nodes``."""

    def __init__(self, nodes: Iterable[Node]) -> None:
        self._cls = _attr_class(nodes)

    def dtype(self, dtype: int) -> Any:
        value = self._cls()
        value.type = dtype
        return value

    def integer(self, number: int) -> Any:
        value = self._cls()
        value.i = number
        return value

    def real(self, number: float) -> Any:
        value = self._cls()
        value.f = number
        return value

    def flag(self, flag: bool) -> Any:
        value = self._cls()
        value.b = flag
        return value

    def string(self, text: str) -> Any:
        value = self._cls()
        value.s = text.encode()
        return value

    def strings(self, texts: Sequence[str]) -> Any:
        value = self._cls()
        value.list.s.extend(t.encode() for t in texts)
        return value

    def types(self, dtypes: Sequence[int]) -> Any:
        value = self._cls()
        value.list.type.extend(dtypes)
        return value

    def ints(self, numbers: Sequence[int]) -> Any:
        value = self._cls()
        value.list.i.extend(numbers)
        return value

    def copy(self, attr: Any) -> Any:
        value = self._cls()
        value.CopyFrom(attr)
        return value


def _attr_class(nodes: Iterable[Node]) -> Any:
    for node in nodes:
        for value in node.attrs.values():
            return type(value)
    from tensorflow.core.framework import attr_value_pb2  # only for attr-less IR-built graphs

    return attr_value_pb2.AttrValue


#: Conv2D attrs that carry over unchanged into ``_FusedConv2D`` (it declares the same ones), and
#: back when lowering expands a ``_FusedConv2D`` into its chain.
CONV2D_ATTRS = (
    "T",
    "strides",
    "padding",
    "explicit_paddings",
    "data_format",
    "dilations",
    "use_cudnn_on_gpu",
)


def fused_ops(node: Node) -> tuple[str, ...]:
    """The ``fused_ops`` of a ``_Fused*`` node."""
    value: Any = node.attrs.get("fused_ops")
    return tuple(s.decode() for s in value.list.s) if value is not None else ()
