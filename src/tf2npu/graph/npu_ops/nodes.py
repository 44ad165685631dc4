"""Building NPU-op nodes and reading them back: their output dtypes (before or after
materialisation), and the marks by which a call node says which NPU op it stands for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tf2npu.errors import InternalError
from tf2npu.graph.npu_ops.catalogue import NPU_OPS
from tf2npu.graph.npu_ops.opdef import TYPE_ATTR, NpuOpDef, build_attrs

if TYPE_CHECKING:  # the IR only in annotations: the op facts the IR's lint reads import no IR
    from tf2npu.graph.ir import Graph, Node, TensorRef

__all__ = [
    "NPU_ATTRS_META",
    "NPU_ATTR_PREFIX",
    "NPU_OP_ATTR",
    "NPU_OP_META",
    "add_npu_node",
    "is_npu_op",
    "npu_layout",
    "op_def_of",
    "output_dtypes",
]

#: ``node.meta`` key → the NPU op type of a node :func:`materialize` turned into a call.
NPU_OP_META = "npu_op"
#: ``node.meta`` key → the NPU op attrs (``T`` and declared) the call node no longer carries.
NPU_ATTRS_META = "npu_attrs"

# A call node the TF client emitted (tf2npu.client.ops) carries its NPU op in private attrs
# (TensorFlow ignores ``_``-prefixed attrs on a call); ``recognize`` reads them back.
#: Private node attr holding the NPU op type a call node stands for.
NPU_OP_ATTR = "_npu_op"
#: Prefix of the private node attrs holding the NPU op's attrs (``_npu_attr_T`` ...).
NPU_ATTR_PREFIX = "_npu_attr_"

NpuLayout = tuple[tuple[str, tuple[int, ...]], ...]


def is_npu_op(op_type: str) -> bool:
    """Whether ``op_type`` is an NPU op of the catalogue (exists on Ascend, not in TF)."""
    return op_type in NPU_OPS


def add_npu_node(
    graph: Graph,
    name: str,
    op: str,
    inputs: Sequence[TensorRef],
    *,
    dtype: int,
    attrs: Mapping[str, Any] | None = None,
    origin: Iterable[str] = (),
) -> Node:
    """Adds a node of NPU op ``op`` with ``T = dtype`` and every declared attr set.

    Raises:
        InternalError: ``op`` is not in the catalogue, or the inputs, dtype or attrs do not fit
            its definition (the message names the op and the fix).
    """
    definition = NPU_OPS.get(op)
    if definition is None:
        raise InternalError(
            f"{op!r} is not an NPU op; the catalogue has: {', '.join(sorted(NPU_OPS))}"
        )
    built = build_attrs(definition, len(inputs), dtype, attrs or {})
    return graph.add_node(name, op, inputs, attrs=built, origin=origin)


def op_def_of(node: Node) -> NpuOpDef | None:
    """The definition of an NPU-op node, materialised or not; ``None`` for other nodes."""
    return NPU_OPS.get(node.meta.get(NPU_OP_META, node.op))


def output_dtypes(node: Node) -> tuple[int, ...]:
    """The dtype of each output of an NPU-op node (materialised or not).

    Raises:
        InternalError: ``node`` is not an NPU-op node, or lacks a type attr.
    """
    layout = npu_layout(node)
    if layout is None:
        raise InternalError(
            f"node {node.name!r} ({node.op}) is not an NPU-op node with its type attrs set; "
            "build NPU-op nodes with add_npu_node"
        )
    return tuple(d for _, ds in layout for d in ds)


def npu_layout(node: Node) -> NpuLayout | None:
    """Output layout ``((arg, (dtype,)), ...)`` of an NPU-op node; ``None`` if not one or untyped.

    A type attr the node lacks takes its declared default; a missing ``T`` gives ``None``
    (lint then skips the node, as for any op whose dtypes it cannot know).
    """
    definition = op_def_of(node)
    if definition is None:
        return None
    attrs = node.meta.get(NPU_ATTRS_META, node.attrs)
    value = attrs.get(TYPE_ATTR)
    if value is None:
        return None
    types = {TYPE_ATTR: value.type}
    for spec in definition.attrs:
        if spec.kind == "type":
            given = attrs.get(spec.name)
            types[spec.name] = given.type if given is not None else int(spec.default)
    return tuple((arg.name, (arg.resolve(types),)) for arg in definition.outputs)
