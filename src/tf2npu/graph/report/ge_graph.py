"""The graph JSON of each GeOp (``atc --mode=5`` shape), built from the engine's decided IR.

:func:`ge_graphs` gives one :class:`~tf2npu.artifacts.gegraph.GeGraph` per GeOp, in GeOp order:
the GeOp's member nodes in execution order, each with its op type, its inputs, the dtype and
shape of every input and output, and where it comes from, so a dump of a fused or cast op maps
back to the user's ops:

* ``original_op_names`` — the user's ops a pass-created node stands for (``node.origin``);
* ``pass_name`` — the vendor's name of the fusion pass whose rule made the node (the rule's
  first alias; :data:`~tf2npu.graph.decisions.FUSED_BY`), ``""`` for every other node: the
  adapter names no pass for the precision pass's casts and float16 clones;
* on an output, the user's tensor it carries (``origin_name``/``origin_index``): see
  :func:`carriers`; else, for a node a pass made for one user op (a float16 clone, a cast),
  output ``i`` of that op. Outputs of the user's own nodes carry themselves and name no origin.

The IR is the one after every pass, lowering included: a node lowering gave a CPU form shows
what the device runs under its name (:class:`~tf2npu.graph.decisions.DeviceForm`), and
lowering's helper nodes are not GeOp members. Only the top-level graph is read: nodes inside
function bodies are not dumped. Importing this module does not import TensorFlow (reading
output dtypes from op definitions does).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

from tf2npu.artifacts.dump import ge_dtype
from tf2npu.artifacts.gegraph import GeGraph, GeOp, TensorDesc
from tf2npu.dtypes import DTYPES, base_dtype
from tf2npu.errors import InternalError
from tf2npu.graph._opdef import flat_dtypes, output_layout
from tf2npu.graph.decisions import (
    CLUSTERS,
    DEVICE_FORM,
    FUSED_BY,
    SUPERSEDED,
    Cluster,
    DeviceForm,
    replacement_of,
)
from tf2npu.graph.ir import Graph, Node, TensorRef
from tf2npu.graph.npu_ops import NPU_OP_META

__all__ = [
    "carriers",
    "device_inputs",
    "device_op",
    "fusion_pass_names",
    "ge_dtype_name",
    "ge_graphs",
]

_NUMPY_NAMES = {n: d.numpy for n, d in DTYPES.items() if d.numpy}
"""``DataType`` values numpy has a dtype for -> its name."""
_GE_NAMES = {n: d.enum for n, d in DTYPES.items() if not d.numpy}
"""The other ``DataType`` values -> GE's names (TF's enum names)."""
UNDEFINED = "DT_UNDEFINED"
#: The node attr TensorFlow writes with ``as_graph_def(add_shapes=True)``.
OUTPUT_SHAPES = "_output_shapes"


def ge_dtype_name(dtype: int | None) -> str:
    """The GE name of a TensorFlow ``DataType`` enum value (a ref type as its base type).

    >>> ge_dtype_name(19), ge_dtype_name(101), ge_dtype_name(None)
    ('DT_FLOAT16', 'DT_FLOAT', 'DT_UNDEFINED')
    """
    if dtype is None:
        return UNDEFINED
    base = base_dtype(dtype)
    numpy_name = _NUMPY_NAMES.get(base)
    return ge_dtype(numpy_name) if numpy_name is not None else _GE_NAMES.get(base, UNDEFINED)


def device_op(node: Node) -> str:
    """The op type the device runs for ``node``: an NPU op's own type (lowering turns it into a
    function call), a CPU form's original type, else ``node.op``."""
    npu_op = node.meta.get(NPU_OP_META)
    if npu_op is not None:
        return str(npu_op)
    form: DeviceForm | None = node.meta.get(DEVICE_FORM)
    return form.op if form is not None else node.op


def device_inputs(node: Node) -> tuple[tuple[TensorRef, ...], tuple[str, ...]]:
    """The data and control inputs of ``node`` as the device runs it (a CPU form's are its
    helper nodes; :class:`~tf2npu.graph.decisions.DeviceForm` keeps the decided ones)."""
    form: DeviceForm | None = node.meta.get(DEVICE_FORM)
    if form is not None:
        return form.inputs, form.control_inputs
    return node.inputs, node.control_inputs


def fusion_pass_names() -> dict[str, str]:
    """Fusion rule name → the vendor pass name the graph JSON shows (its first alias, else the
    rule's own name)."""
    from tf2npu.graph.fusion import known_rules

    return {name: aliases[0] if aliases else name for name, (_, aliases) in known_rules().items()}


class _Tensors:
    """Dtypes and shapes of the graph's tensors, read once per node."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._dtypes: dict[str, tuple[int | None, ...] | None] = {}
        self._shapes: dict[str, tuple[tuple[int, ...], ...]] = {}

    def dtypes(self, node: Node) -> tuple[int | None, ...] | None:
        """One enum value per output, or None when the op's outputs are unknown."""
        if node.name not in self._dtypes:
            layout = output_layout(node)
            self._dtypes[node.name] = None if layout is None else flat_dtypes(layout)
        return self._dtypes[node.name]

    def dtype(self, ref: TensorRef) -> str:
        node = self.graph.get(ref.node)
        dtypes = None if node is None else self.dtypes(node)
        if dtypes is None or ref.index >= len(dtypes):
            return UNDEFINED
        return ge_dtype_name(dtypes[ref.index])

    def shapes(self, node: Node) -> tuple[tuple[int, ...], ...]:
        if node.name not in self._shapes:
            self._shapes[node.name] = _output_shapes(node.attrs.get(OUTPUT_SHAPES))
        return self._shapes[node.name]

    def shape(self, ref: TensorRef) -> tuple[int, ...] | None:
        """``ref``'s shape from its node's ``_output_shapes``, else (pass-created nodes have
        none) a ``Cast``'s input's, a clone's (same op as its one origin) its origin's. None
        when unknown."""
        node = self.graph.get(ref.node)
        if node is None:
            return None
        shapes = self.shapes(node)
        if ref.index < len(shapes):
            return shapes[ref.index]
        op = device_op(node)
        inputs, _ = device_inputs(node)
        if op == "Cast" and inputs:
            return self.shape(inputs[0])
        source = self.graph.get(node.origin[0]) if len(node.origin) == 1 else None
        if source is not None and source is not node and device_op(source) == op:
            return self.shape(TensorRef(source.name, ref.index))
        return None

    def count(self, node: Node) -> int:
        """How many outputs ``node`` has: from its op, its shapes, else the ones it is read at."""
        dtypes = self.dtypes(node)
        if dtypes is not None:
            return len(dtypes)
        read = [r.index for user in self.graph.consumers(node) for r in user.inputs
                if r.node == node.name]  # fmt: skip
        return max([len(self.shapes(node)) - 1, *read]) + 1


UNKNOWN_RANK = (-2,)
"""GE's shape of unknown rank (``dim: [-2]``); ``[]`` would say "a scalar"."""


def _output_shapes(value: Any) -> tuple[tuple[int, ...], ...]:
    """An ``_output_shapes`` attr as tuples (unknown rank: ``(-2,)``, unknown dimension: -1)."""
    if value is None:
        return ()
    return tuple(
        UNKNOWN_RANK if shape.unknown_rank else tuple(int(d.size) for d in shape.dim)
        for shape in value.list.shape
    )


def carriers(graph: Graph, members: Collection[str]) -> dict[TensorRef, TensorRef]:
    """Which output of a GeOp member carries each user tensor a pass replaced.

    For every user node ``S`` (no ``origin``) that a pass superseded, each replaced output
    ``S:i`` is carried by the tensor now holding its value, followed through every later
    replacement (:func:`~tf2npu.graph.decisions.replacement_of`). When that is a ``Cast`` made
    for ``S`` (the precision pass's cast back of a float16 clone), the tensor it casts carries
    the value too, in the lower dtype. Of these, one produced by a pass-created member is chosen,
    the one in ``S:i``'s own dtype first: the float32 cast back when the device runs it, else
    the float16 clone (whose cast back only serves fetches). Each user tensor thus maps to at
    most one output; were two to claim one output, the one in the output's dtype keeps it, then
    the first in graph order. A replacement produced by a user node carries that node's own
    tensor and is not claimed.

    Returns:
        ``{member output: user tensor}``.
    """
    return _carriers(graph, members, _Tensors(graph))


def _carriers(
    graph: Graph, members: Collection[str], tensors: _Tensors
) -> dict[TensorRef, TensorRef]:
    found: dict[TensorRef, tuple[TensorRef, bool]] = {}
    for node in graph:
        superseded = node.meta.get(SUPERSEDED)
        if superseded is None or node.origin:
            continue
        for old in superseded.outputs:
            pick = _carrier(graph, old, members, tensors)
            if pick is None:
                continue
            out, exact = pick
            held = found.get(out)
            if held is None or (exact and not held[1]):
                found[out] = (old, exact)
    return {out: user for out, (user, _) in found.items()}


def _carrier(
    graph: Graph, old: TensorRef, members: Collection[str], tensors: _Tensors
) -> tuple[TensorRef, bool] | None:
    """The member output carrying ``old`` and whether it has ``old``'s dtype, or None."""
    final = replacement_of(graph, old)
    candidates = [final]
    producer = graph.get(final.node)
    if producer is not None and device_op(producer) == "Cast" and producer.origin == (old.node,):
        inputs, _ = device_inputs(producer)
        candidates.extend(replacement_of(graph, ref) for ref in inputs[:1])
    live = [c for c in candidates if c.node in members and graph[c.node].origin]
    if not live:
        return None
    want = tensors.dtype(old)
    exact = [c for c in live if tensors.dtype(c) == want]
    return (exact[0], True) if exact else (live[0], False)


def ge_graphs(graph: Graph) -> list[GeGraph]:
    """One graph JSON model per GeOp of ``graph`` (``graph.meta[CLUSTERS]``), in GeOp order.

    ``graph`` is the top-level graph of an engine run after its passes
    (:attr:`~tf2npu.graph.engine.EngineRun.graph`); without a partition it has no GeOp and the
    list is empty. Ops are the GeOp's members not superseded, in the partition's order, which
    is topological (execution order); ``id`` is the position.

    Raises:
        InternalError: a GeOp names a node the graph does not hold.
    """
    clusters: list[Cluster] = graph.meta.get(CLUSTERS) or []
    members = {c.name: _members(graph, c) for c in clusters}
    tensors = _Tensors(graph)
    carried = _carriers(graph, {n.name for nodes in members.values() for n in nodes}, tensors)
    passes = fusion_pass_names().get
    return [
        GeGraph(name, tuple(_ge_op(n, i, tensors, carried, passes) for i, n in enumerate(nodes)))
        for name, nodes in members.items()
    ]


def _members(graph: Graph, cluster: Cluster) -> list[Node]:
    nodes = []
    for name in cluster.nodes:
        node = graph.get(name)
        if node is None:
            raise InternalError(f"GeOp {cluster.name!r} holds {name!r}, which is not in the graph")
        if SUPERSEDED not in node.meta:
            nodes.append(node)
    return nodes


def _ge_op(
    node: Node,
    position: int,
    tensors: _Tensors,
    carried: Mapping[TensorRef, TensorRef],
    pass_name: Callable[[str], str | None],
) -> GeOp:
    inputs, control = device_inputs(node)
    outputs = [node.output(i) for i in range(tensors.count(node))]
    rule = node.meta.get(FUSED_BY)
    return GeOp(
        name=node.name,
        type=device_op(node),
        id=position,
        inputs=(*(f"{r.node}:{r.index}" for r in inputs), *(f"{c}:-1" for c in control)),
        input_desc=tuple(_desc(r, tensors, carried, origin=False) for r in inputs),
        output_desc=tuple(_output_desc(node, r, tensors, carried) for r in outputs),
        original_op_names=node.origin,
        pass_name="" if rule is None else pass_name(rule) or rule,
    )


def _output_desc(
    node: Node, ref: TensorRef, tensors: _Tensors, carried: Mapping[TensorRef, TensorRef]
) -> TensorDesc:
    """An output's descriptor, naming the user tensor it stands for: the one it carries
    (:func:`carriers`), else, for a node a pass made for one user op (a float16 clone, a
    cast), output ``i`` of that op. msaccucmp compares an output through these attrs only (a
    ``Cast``'s through its input's, and a user's own op through its name), so every output
    standing for a user tensor has them; a fused node of several ops whose output carries
    none of theirs has none."""
    desc = _desc(ref, tensors, carried, origin=True)
    if desc.origin_name is not None or len(node.origin) != 1:
        return desc
    return replace(desc, origin_name=node.origin[0], origin_index=ref.index)


def _desc(
    ref: TensorRef, tensors: _Tensors, carried: Mapping[TensorRef, TensorRef], *, origin: bool
) -> TensorDesc:
    """``ref``'s dtype and shape (a carrier without shapes of its own has its user tensor's);
    with ``origin``, the user tensor it carries."""
    user = carried.get(ref)
    shape = tensors.shape(ref)
    if shape is None and user is not None:
        shape = tensors.shape(user)
    return TensorDesc(
        tensors.dtype(ref),
        UNKNOWN_RANK if shape is None else shape,
        user.node if origin and user is not None else None,
        user.index if origin and user is not None else None,
    )
