"""``--execution xla``: compile each GeOp with XLA on the CPU instead of running TF kernels.

A GeOp member gets ``_XlaCompile=True`` and ``_XlaScope=<GeOp name>``, which TensorFlow's
auto-clustering honours: nodes sharing a scope may form one XLA cluster, compiled once per
input shape signature and cached by TensorFlow's XLA compilation cache. Members XLA cannot
take stay as TF kernels: ops without an XLA CPU kernel, and ops with reference-typed inputs or
outputs (``VariableV2`` and the ``Assign``/``Apply*`` ops on it), which XLA clusters cannot hold.
"""

from __future__ import annotations

import functools
from typing import Any

from tf2npu.dtypes import DT_STRING, REF_OFFSET
from tf2npu.graph.passes.lowering import GEOP_ATTR

__all__ = ["mark_clusters"]

_XLA_DEVICE = "XLA_CPU_JIT"


_REF_PRODUCERS = frozenset(
    {
        "VariableV2",
        "Variable",
        "TemporaryVariable",
        "RefIdentity",
        "RefSwitch",
        "RefEnter",
        "RefMerge",
        "RefExit",
        "RefNextIteration",
    }
)


def mark_clusters(graph_def: Any) -> int:
    """Mark the compilable members of every GeOp in ``graph_def``; returns how many."""
    from tensorflow.core.framework import attr_value_pb2

    _register_xla_kernels()
    producers = {node.name: node.op for node in graph_def.node}
    marked = 0
    for node in graph_def.node:
        if GEOP_ATTR not in node.attr or not _compilable(node, producers):
            continue
        node.attr["_XlaCompile"].CopyFrom(attr_value_pb2.AttrValue(b=True))
        node.attr["_XlaScope"].CopyFrom(attr_value_pb2.AttrValue(s=node.attr[GEOP_ATTR].s))
        marked += 1
    return marked


def _compilable(node: Any, producers: dict[str, str]) -> bool:
    if not _has_xla_kernel(node.op):
        return False
    for value in node.attr.values():
        if value.HasField("type") and (value.type == DT_STRING or value.type >= REF_OFFSET):
            return False
    for text in node.input:
        if text.startswith("^"):
            continue
        if producers.get(text.split(":")[0]) in _REF_PRODUCERS:
            return False
    return True


@functools.cache
def _register_xla_kernels() -> None:
    """TensorFlow registers XLA kernels on the first XLA compile: do one, in a stock session."""
    import tensorflow as tf

    from tf2npu.runtime.stock import stock_session

    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.xla.experimental.jit_scope():
        doubled = tf.constant(1.0) * 2.0
    session = stock_session(graph=graph)
    try:
        session.run(doubled)
    finally:
        session.close()


@functools.cache
def _has_xla_kernel(op_type: str) -> bool:
    from tensorflow.python.framework import kernels

    try:
        registered = kernels.get_registered_kernels_for_op(op_type)
    except Exception:
        return False
    return any(kernel.device_type == _XLA_DEVICE for kernel in registered.kernel)
