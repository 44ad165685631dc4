"""The attrs of a ``_FusedConv2D`` built from a ``Conv2D`` (shared by two rules)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tf2npu.graph.fusion.attrs import CONV2D_ATTRS, AttrFactory
from tf2npu.graph.fusion.pattern import dtype_of
from tf2npu.graph.fusion.rules._common import copy_attrs
from tf2npu.graph.ir import Node


def fused_conv_attrs(
    conv: Node, ops: Sequence[str], *, num_args: int, epsilon: float | None = None
) -> dict[str, Any]:
    """``_FusedConv2D`` attrs: the conv's own, plus ``fused_ops`` and ``num_args`` extra inputs
    in the conv's dtype (``TArgs``)."""
    make = AttrFactory([conv])
    attrs = copy_attrs(conv, CONV2D_ATTRS)
    dtype = dtype_of(conv)
    if dtype is not None:
        attrs["TArgs"] = make.types([dtype] * num_args)
    attrs["num_args"] = make.integer(num_args)
    attrs["fused_ops"] = make.strings(list(ops))
    attrs["epsilon"] = make.real(0.0001 if epsilon is None else epsilon)
    return attrs
