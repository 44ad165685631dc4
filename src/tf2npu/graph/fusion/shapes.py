"""Static ranks and shapes the graph itself proves, for rules that need them.

Session graphs carry no ``_output_shapes``, yet a rule often needs a rank (layer norm over
``[2]`` is "the last axis" only on a rank-3 input) or a size (a bias as long as the matmul's
output columns). These functions read them from what the graph does hold: placeholder and
variable ``shape`` attrs, Const tensors, reshape targets, and the ops between those and the
tensor asked about (elementwise ops broadcast to the larger rank, ``keep_dims`` reductions and
activations keep the rank). Anything else is unknown (``None``), and rules that need the fact
do not fire.
"""

from __future__ import annotations

from typing import Any

from tf2npu.graph.fusion.consts import const_values
from tf2npu.graph.ir import Graph, Node, TensorRef

__all__ = ["rank_of", "static_shape"]

#: Ops whose output 0 has the rank (mostly the shape too) of their input 0.
_SAME_RANK = frozenset(
    {
        "BiasAdd",
        "Relu",
        "Relu6",
        "Identity",
        "Tanh",
        "Sigmoid",
        "Elu",
        "Selu",
        "Cast",
        "Neg",
        "StopGradient",
        "Softmax",
        "LogSoftmax",
        "Erf",
        "Sqrt",
        "Rsqrt",
        "Square",
        "Exp",
        "Log",
        "Gelu",
        "Reciprocal",
        "Abs",
        "ReadVariableOp",
        "FastGelu",
        "Snapshot",
        "LayerNorm",
        "DropOutDoMask",
        "Slice",
        "Tile",
        "Pad",
        "PadV2",
        "MirrorPad",
        "ConcatV2",
        "Reverse",
        "ReverseV2",
        "ZerosLike",
        "OnesLike",
    }
)
#: Ops whose output has one more axis than their input 0.
_ONE_MORE = frozenset({"ExpandDims", "OneHot"})
#: Elementwise ops with broadcasting: the output rank is the largest input rank.
_BROADCAST = frozenset(
    {
        "Add",
        "AddV2",
        "Sub",
        "Mul",
        "RealDiv",
        "Maximum",
        "Minimum",
        "SquaredDifference",
        "Pow",
        "SelectV2",
        "DivNoNan",
    }
)
#: Reductions whose ``keep_dims`` true keeps the rank.
_REDUCE = frozenset({"Mean", "Sum", "Max", "Min", "Prod"})
_MATRIX = frozenset({"MatMul", "_FusedMatMul", "SparseMatMul"})
_BATCH_MATMUL = frozenset({"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"})
_VARIABLES = frozenset(
    {
        "VariableV2",
        "Variable",
        "VarHandleOp",
        "Placeholder",
        "PlaceholderV2",
        "PlaceholderWithDefault",
    }
)
_Memo = dict[TensorRef, int | None]
#: How far upstream a question is followed (the walk is memoised, so this bounds depth only).
_MAX_DEPTH = 48


def rank_of(graph: Graph, ref: TensorRef) -> int | None:
    """The static rank of ``ref`` when the graph proves it, else ``None``."""
    return _rank(graph, ref, {}, 0)


def _rank(graph: Graph, ref: TensorRef, memo: _Memo, depth: int) -> int | None:
    if ref in memo:
        return memo[ref]
    memo[ref] = None  # a cycle (never in a GraphDef, but cheap to rule out) is unknown
    node = graph.get(ref.node)
    too_deep = node is None or depth > _MAX_DEPTH
    rank = None if node is None or too_deep else _node_rank(graph, node, ref, memo, depth + 1)
    memo[ref] = rank
    return rank


def _node_rank(graph: Graph, node: Node, ref: TensorRef, memo: _Memo, depth: int) -> int | None:
    declared = _declared_shape(node, ref.index)
    if declared is not None:
        return len(declared)
    inputs = node.inputs
    if ref.index != 0 or not inputs:
        return None
    op = node.op
    if op in _MATRIX:
        return 2
    if op in _SAME_RANK:  # ConcatV2 and Tile keep the rank, not the shape
        return _rank(graph, inputs[0], memo, depth)
    if op in _ONE_MORE:
        rank = _rank(graph, inputs[0], memo, depth)
        return None if rank is None else rank + 1
    if op == "GatherV2" and len(inputs) == 3:
        return _gather_rank(graph, node, memo, depth)
    if op in _BROADCAST or op in _BATCH_MATMUL:
        ranks = [_rank(graph, r, memo, depth) for r in inputs]
        return None if any(r is None for r in ranks) else max(r for r in ranks if r is not None)
    if op in _REDUCE and _attr_bool(node, "keep_dims"):
        return _rank(graph, inputs[0], memo, depth)
    if op == "Reshape" and len(inputs) == 2:
        return _length(graph, inputs[1])
    if op == "Transpose" and len(inputs) == 2:
        return _length(graph, inputs[1])
    return None


def _gather_rank(graph: Graph, node: Node, memo: _Memo, depth: int) -> int | None:
    """``rank(params) + rank(indices) - 1`` (``batch_dims`` 0: an embedding lookup)."""
    if int(getattr(node.attrs.get("batch_dims"), "i", 0)):
        return None
    params, indices = (_rank(graph, r, memo, depth) for r in node.inputs[:2])
    return None if params is None or indices is None else params + indices - 1


def _length(graph: Graph, ref: TensorRef) -> int | None:
    """The number of elements of a 1-D shape vector (a reshape target, a permutation)."""
    node = graph.get(ref.node)
    if node is None:
        return None
    values = const_values(node)
    if values is not None:
        return len(values)
    if node.op == "Pack":
        return len(node.inputs)
    if node.op == "ConcatV2" and len(node.inputs) >= 2:
        parts = [_length(graph, r) for r in node.inputs[:-1]]
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)
    if node.op == "GatherV2" and node.inputs:
        # tensordot's free dims: Gather(Shape(x), Const indices) has one element per index
        return _length(graph, node.inputs[1]) if len(node.inputs) > 1 else None
    return None


def static_shape(graph: Graph, ref: TensorRef) -> list[int] | None:
    """The fully known static shape of ``ref``.

    From ``_output_shapes``, a placeholder's or variable's ``shape`` attr or a Const's tensor,
    through ops that keep the shape (a variable's ``read`` Identity, ``ReadVariableOp``, Cast).
    """
    for _ in range(_MAX_DEPTH):
        node = graph.get(ref.node)
        if node is None:
            return None
        shape = _declared_shape(node, ref.index)
        if shape is not None:
            return None if any(d < 0 for d in shape) else shape
        if node.op not in ("Identity", "ReadVariableOp", "Cast", "Snapshot") or not node.inputs:
            return None
        ref = node.inputs[0]
    return None


def _declared_shape(node: Node, index: int) -> list[int] | None:
    """The shape a node's attrs state for output ``index`` (-1 for unknown dims)."""
    shapes: Any = node.attrs.get("_output_shapes")
    proto: Any = None
    if shapes is not None and index < len(shapes.list.shape):
        proto = shapes.list.shape[index]
    elif node.op in _VARIABLES and index == 0 and "shape" in node.attrs:
        proto = node.attrs["shape"].shape
    elif node.op == "Const" and index == 0 and "value" in node.attrs:
        proto = getattr(node.attrs["value"], "tensor", None)
        proto = getattr(proto, "tensor_shape", None)
    if proto is None or proto.unknown_rank:
        return None
    return [int(d.size) for d in proto.dim]


def _attr_bool(node: Node, name: str) -> bool:
    value: Any = node.attrs.get(name)
    return bool(value.b) if value is not None else False
