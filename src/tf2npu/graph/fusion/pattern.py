"""Match a small DAG pattern that ends at a root node, and decide whether it may be fused.

A pattern is a tree of :class:`Op` (a node whose type is one of ``ops``), :class:`Var` (any
tensor, bound by label: the same label twice must be the same tensor, which is how a pattern
says "x is read twice"), :class:`Const` (a scalar ``Const`` close to a value) and
:class:`AnyOf` (equivalent spellings of one value: ``x * x * x`` or ``pow(x, 3)``; the first
alternative that lets the whole pattern match wins). ``Op`` labels may repeat too: the second
occurrence must be the same node, so a pattern can be a DAG (layer norm reads its mean twice);
two different labels may bind the same node (``x - mean`` written once or twice). Constants
stay outside the fused region: they become inputs of the fused node and may have other readers.

Two-input ops in :data:`COMMUTATIVE` (Mul, Add, Maximum, ...) match their operands in either
order unless the pattern says ``commutative=False``, so a rule writes each formula once.

:func:`match` answers the structural question (op types, wiring, constants); :func:`refusal`
answers the one GE asks before it rewrites: every matched node live, on the device, on the same
device string, in one dtype, and no interior output read from outside the pattern.

>>> from tf2npu.graph.ir import Graph
>>> g = Graph()
>>> x = g.add_node("x", "Placeholder")
>>> r = g.add_node("r", "Relu", [x.output()])
>>> m = match(g, r, Op("relu", {"Relu"}, (Var("x"),)))
>>> m.nodes["relu"].name, str(m.tensors["x"])
('relu', 'x')
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tf2npu.graph._opdef import output_layout
from tf2npu.graph.decisions import PLACEMENT, SUPERSEDED, Placement, is_fetch_only
from tf2npu.graph.fusion.consts import const_values, scalar_value
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef, is_reserved_name

__all__ = [
    "COMMUTATIVE",
    "SHAPE_READERS",
    "AnyOf",
    "Const",
    "Match",
    "Op",
    "Pattern",
    "Var",
    "any_of",
    "dtype_of",
    "flat_index",
    "match",
    "output_ref",
    "reads_shape_of_output0",
    "refusal",
]

#: Attrs that carry a node's computing dtype, tried in order (Cast computes in ``DstT``).
_DTYPE_ATTRS = ("T", "dtype", "DstT")
#: Ops whose ``T`` is not their computing dtype (random ops: ``T`` is the shape's type).
_DTYPE_FIRST = frozenset({"RandomUniform", "RandomStandardNormal", "TruncatedNormal"})
#: Ops that read only the shape of their input: a fused output of the same shape serves them.
SHAPE_READERS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
_ONE_INPUT_SHAPE_READERS = SHAPE_READERS - {"ShapeN"}
#: Two-input ops whose operands may be swapped: patterns match them in either order by default.
COMMUTATIVE = frozenset(
    {"Mul", "Add", "AddV2", "Maximum", "Minimum", "SquaredDifference", "LogicalAnd", "LogicalOr"}
)


@dataclass(frozen=True)
class Var:
    """Any tensor; the first occurrence binds ``label``, later ones must be the same tensor."""

    label: str


@dataclass(frozen=True)
class Const:
    """A one-element ``Const`` close to ``value``; ``value`` ``None`` accepts any small Const
    (up to 64 elements: axes, shapes)."""

    label: str
    value: float | None = None
    rel_tol: float = 1e-6


@dataclass(frozen=True)
class Op:
    """A node whose type is in ``ops``, reading exactly ``inputs`` (output ``index`` is used).

    ``commutative`` lets a two-input op match its inputs in either order; ``None`` (the
    default) means "if every op in ``ops`` is in :data:`COMMUTATIVE`".
    """

    label: str
    ops: frozenset[str] | set[str]
    inputs: tuple[Pattern, ...] = ()
    commutative: bool | None = None
    index: int = 0

    def swaps(self) -> bool:
        """Whether the matcher also tries the two operands the other way round."""
        if self.commutative is not None:
            return self.commutative
        return len(self.inputs) == 2 and all(op in COMMUTATIVE for op in self.ops)


@dataclass(frozen=True)
class AnyOf:
    """Equivalent spellings of one value, tried in order (with backtracking into later ones).

    Alternatives should bind the same labels a rule reads afterwards; a label only one
    alternative binds is absent from the match when another one matched.
    """

    alternatives: tuple[Pattern, ...]


def any_of(*alternatives: Pattern) -> AnyOf:
    """``AnyOf(alternatives)``, flattening nested ``AnyOf``s."""
    flat: list[Pattern] = []
    for alt in alternatives:
        flat.extend(alt.alternatives if isinstance(alt, AnyOf) else (alt,))
    return AnyOf(tuple(flat))


Pattern = Op | Var | Const | AnyOf


@dataclass
class Match:
    """What a pattern bound: Op labels to nodes, Var and Const labels to tensors."""

    root: Node
    nodes: dict[str, Node] = field(default_factory=dict)
    tensors: dict[str, TensorRef] = field(default_factory=dict)

    def interior(self) -> list[Node]:
        """The matched nodes other than the root (unique, in binding order)."""
        seen: dict[str, Node] = {}
        for node in self.nodes.values():
            if node is not self.root:
                seen.setdefault(node.name, node)
        return list(seen.values())


def match(graph: Graph, root: Node, pattern: Op | AnyOf) -> Match | None:
    """Bind ``pattern`` to the subgraph ending at ``root``; the first complete binding.

    The search backtracks over every commutative choice (an early choice that binds a Var
    wrongly is undone when a later sibling fails), so operand order never hides a match.
    Bindings live in two dicts with undo on backtrack; a cheap check of the op types one level
    down rejects most candidate roots before any search starts.
    """
    found = Match(root)
    for _ in _root(graph, root, pattern, found):
        return Match(root, dict(found.nodes), dict(found.tensors))
    return None


def _root(graph: Graph, node: Node, pat: Pattern, m: Match) -> Iterator[None]:
    if isinstance(pat, AnyOf):
        for alt in pat.alternatives:
            yield from _root(graph, node, alt, m)
    elif isinstance(pat, Op) and _plausible(graph, node, pat):
        yield from _node(graph, node, pat, m)


def _plausible(graph: Graph, node: Node, pat: Op) -> bool:
    """Op types of ``node`` and of the producers its Op sub-patterns need (order-free)."""
    # ``_inputs`` (not the ``inputs`` copy): this runs for every candidate root of every rule.
    if node.op not in pat.ops or len(node._inputs) != len(pat.inputs):
        return False
    ops = []
    for ref in node._inputs:
        producer = graph.get(ref.node)
        ops.append(producer.op if producer is not None else "")
    for sub in pat.inputs:
        heads = _head_ops(sub)
        if heads is not None and not any(op in heads for op in ops):
            return False
    return True


def _head_ops(pat: Pattern) -> frozenset[str] | None:
    """The op types a producer must have to match ``pat`` (``None``: any producer may)."""
    if isinstance(pat, Op):
        return frozenset(pat.ops)
    if isinstance(pat, AnyOf):
        heads: set[str] = set()
        for alt in pat.alternatives:
            sub = _head_ops(alt)
            if sub is None:
                return None
            heads |= sub
        return frozenset(heads)
    return None


def _node(graph: Graph, node: Node, pat: Op, m: Match) -> Iterator[None]:
    bound = m.nodes.get(pat.label)
    if bound is not None:
        if bound is node:
            yield None
        return
    refs = node._inputs
    if node.op not in pat.ops or len(refs) != len(pat.inputs):
        return
    m.nodes[pat.label] = node
    try:
        yield from _inputs(graph, refs, pat.inputs, 0, m)
        if pat.swaps() and len(refs) == 2 and refs[0] != refs[1]:
            yield from _inputs(graph, [refs[1], refs[0]], pat.inputs, 0, m)
    finally:
        del m.nodes[pat.label]


def _inputs(
    graph: Graph, refs: list[TensorRef], pats: tuple[Pattern, ...], i: int, m: Match
) -> Iterator[None]:
    if i == len(pats):
        yield None
        return
    for _ in _input(graph, refs[i], pats[i], m):
        yield from _inputs(graph, refs, pats, i + 1, m)


def _input(graph: Graph, ref: TensorRef, pat: Pattern, m: Match) -> Iterator[None]:
    if isinstance(pat, Var):
        yield from _bind(m, pat.label, ref)
        return
    if isinstance(pat, AnyOf):
        for alt in pat.alternatives:
            yield from _input(graph, ref, alt, m)
        return
    producer = graph.get(ref.node)
    if producer is None:  # a function argument
        return
    if isinstance(pat, Const):
        if _const_ok(producer, pat):
            yield from _bind(m, pat.label, ref)
        return
    if ref.index == pat.index:
        yield from _node(graph, producer, pat, m)


def _bind(m: Match, label: str, ref: TensorRef) -> Iterator[None]:
    bound = m.tensors.get(label)
    if bound is not None:
        if bound == ref:
            yield None
        return
    m.tensors[label] = ref
    try:
        yield None
    finally:
        del m.tensors[label]


def _const_ok(node: Node, pat: Const) -> bool:
    if pat.value is None:
        return const_values(node) is not None
    value = scalar_value(node)
    return value is not None and _close(value, pat.value, pat.rel_tol)


def _close(a: float, b: float, rel_tol: float) -> bool:
    return abs(a - b) <= rel_tol * max(abs(a), abs(b), 1e-30)


def dtype_of(node: Node) -> int | None:
    """The ``DataType`` enum a node computes in (from ``T``, ``dtype`` or ``DstT``), if known."""
    names = ("dtype",) if node.op in _DTYPE_FIRST else _DTYPE_ATTRS
    for name in names:
        value: Any = node.attrs.get(name)
        dtype = getattr(value, "type", 0) if value is not None else 0
        if dtype:
            return int(dtype)
    return None


def refusal(
    graph: Graph,
    m: Match,
    outputs: Iterable[int] = (0,),
    exported: Collection[str] = (),
    shaped: Collection[str] = (),
    gradient: Collection[str] = (),
) -> str | None:
    """Why GE would refuse to fuse ``m`` (a short reason), or ``None`` when it may.

    ``outputs`` are the root outputs the fused node replaces; a reader of any other root output
    would keep the root alive, so it refuses too. ``exported`` names interior nodes whose value a
    fused output also carries (Adam's new moments): their outside readers are allowed.
    ``shaped`` names interior nodes whose *shape* a new node carries (a matmul inside a
    reshape-matmul-reshape dense): outside readers of their shape only (:data:`SHAPE_READERS`,
    e.g. the Reshape gradient's ``Shape``) are allowed, and the rewrite moves them.
    ``gradient`` names the gradient ops the fusion replaces too (a training graph's): their
    reads of interior nodes are allowed.
    """
    nodes = list({n.name: n for n in m.nodes.values()}.values())
    for node in nodes:
        if SUPERSEDED in node.meta:
            return f"{node.name} was already rewritten"
        placement = node.meta.get(PLACEMENT)
        if not isinstance(placement, Placement) or not placement.device:
            return f"{node.name} is not placed on the device"
    if isinstance(graph, FunctionGraph) and any(output_layout(n) is None for n in nodes):
        return "a node's output args are unknown (function-body refs name them)"
    if len({n.device for n in nodes}) > 1:
        return "the nodes have different device strings"
    dtypes = {d for d in map(dtype_of, nodes) if d is not None}
    if len(dtypes) > 1:
        return "the nodes compute in different dtypes"
    inside = {n.name for n in nodes} | set(gradient)
    for node in m.interior():
        if node.name in exported:
            continue
        reason = _outside_reader(graph, node, inside, node.name in shaped)
        if reason is not None:
            return reason
    return _unmapped_root_reader(graph, m.root, frozenset(outputs))


def _outside_reader(
    graph: Graph, node: Node, inside: set[str], shape_ok: bool = False
) -> str | None:
    for user in graph.consumers(node):
        if shape_ok and reads_shape_of_output0(graph, node, user):
            continue
        if user.name not in inside and not is_fetch_only(graph, user):
            return f"{node.name} is also read by {user.name}"
    if graph.consumers(node, control=True):
        return f"{node.name} has control dependents"
    if isinstance(graph, FunctionGraph) and (
        node.name in graph.control_ret.values()
        or any(r.node == node.name for r in graph.ret.values())
    ):
        return f"{node.name} is returned by the function"
    return None


def reads_shape_of_output0(graph: Graph, node: Node, user: Node) -> bool:
    """Whether ``user`` only serves the shape of ``node``'s first output.

    A shape op reading it; or the precision pass's cast back to float32 of it (a node tf2npu
    made) whose running readers are all shape ops (the rest superseded): under mixed precision
    the Reshape gradient's ``Shape`` reads the matmul through that cast.
    """
    if any(flat_index(node, r) != 0 for r in user.inputs if r.node == node.name):
        return False
    if user.op in SHAPE_READERS:
        return True
    if user.op != "Cast" or not is_reserved_name(user.name) or len(user.inputs) != 1:
        return False
    if graph.consumers(user, control=True):
        return False
    if isinstance(graph, FunctionGraph) and graph.returns(user.name):
        return False
    # one-input shape ops only: their ``T`` follows the new input's dtype (see rewrite)
    return all(
        r.op in _ONE_INPUT_SHAPE_READERS or SUPERSEDED in r.meta for r in graph.consumers(user)
    )


def _unmapped_root_reader(graph: Graph, root: Node, outputs: frozenset[int]) -> str | None:
    for user in graph.consumers(root):
        for ref in user.inputs:
            if ref.node == root.name and flat_index(root, ref) not in outputs:
                return f"{user.name} reads {ref} of {root.name}"
    if isinstance(graph, FunctionGraph):
        for ref in graph.ret.values():
            if ref.node == root.name and flat_index(root, ref) not in outputs:
                return f"the function returns {ref}"
    return None


def flat_index(node: Node, ref: TensorRef) -> int | None:
    """The flat output index ``ref`` reads (function-body refs name an output arg)."""
    if ref.output_arg is None:
        return ref.index
    layout = output_layout(node)
    if layout is None:
        return None
    start = 0
    for arg, dtypes in layout:
        if arg == ref.output_arg:
            return start + ref.index
        start += len(dtypes)
    return None


def output_ref(graph: Graph, node: Node, flat: int) -> TensorRef | None:
    """How readers in ``graph`` name flat output ``flat`` of ``node`` (``None`` if unknown)."""
    if not isinstance(graph, FunctionGraph):
        return node.output(flat)
    layout = output_layout(node)
    if layout is None:
        return None
    start = 0
    for arg, dtypes in layout:
        if flat < start + len(dtypes):
            return node.output(flat - start, arg)
        start += len(dtypes)
    return None
