"""Structural checks of a graph and the pass contract (DESIGN §3: names and outputs survive).

``lint`` runs after a pass: a failure is a bug (``LintError``, an ``InternalError``).
``validate`` runs the structural checks on a graph the user gave: a failure is a ``GraphError``.
Each problem names its check (a stable string, see ``CHECKS``), the graph and the node.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from tf2npu.errors import GraphError, InternalError
from tf2npu.graph._opdef import Layout, flat_dtypes, output_layout
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef, is_reserved_name

CHECKS = (
    "unique-names",
    "consumer-index",
    "input-exists",
    "input-syntax",
    "output-index",
    "control-exists",
    "ret-exists",
    "acyclic",
    "kept-name",
    "kept-outputs",
    "reserved-suffix",
    "origin-attr",
)

_BACK_EDGE_PRODUCERS = frozenset({"NextIteration", "RefNextIteration"})
_BACK_EDGE_CONSUMERS = frozenset({"Merge", "RefMerge"})

Outputs = tuple[int | None, ...] | None


@dataclass(frozen=True)
class Problem:
    check: str
    graph: str
    node: str
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.graph}, node {self.node!r}: {self.message}"


class LintError(InternalError):
    """A graph broke an invariant after a pass (a bug); ``problems`` lists every finding."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        super().__init__(f"graph lint failed: {first}{more}")

    @property
    def check(self) -> str:
        return self.problems[0].check


@dataclass(frozen=True)
class Signature:
    """Original node names and their output dtypes (``None`` when unknown), per graph.

    Keys of ``graphs`` are ``""`` for the top level and the function name for bodies.
    """

    graphs: Mapping[str, Mapping[str, Outputs]] = field(default_factory=dict)

    @classmethod
    def of(cls, graph: Graph) -> Signature:
        return cls({_key(g): {n.name: _outputs(n) for n in g} for g in graph.walk()})


def lint(graph: Graph, baseline: Signature | None = None) -> None:
    problems = [*structural_problems(graph), *contract_problems(graph, baseline)]
    if problems:
        raise LintError(problems)


def validate(graph: Graph) -> None:
    problems = list(structural_problems(graph))
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise GraphError(f"invalid input graph: {problems[0]}{more}")


def structural_problems(graph: Graph) -> Iterator[Problem]:
    for g in graph.walk():
        yield from _names(g)
        yield from _consumer_index(g)
        for node in g:
            yield from _inputs(g, node)
        if isinstance(g, FunctionGraph):
            yield from _rets(g)
        order = topo_order(g)
        if len(order) != len(g):
            cycle = find_cycle(g, {n.name for n in order})
            yield Problem("acyclic", g.label, cycle[0], "cycle " + " -> ".join(cycle))


def contract_problems(graph: Graph, baseline: Signature | None) -> Iterator[Problem]:
    if baseline is None:
        return
    for g in graph.walk():
        before = baseline.graphs.get(_key(g))
        if before is None:
            continue
        for name, outputs in before.items():
            node = g.get(name)
            if node is None:
                yield Problem("kept-name", g.label, name, "an original node was removed")
                continue
            now = _outputs(node)
            if outputs is not None and now is not None and outputs != now:
                yield Problem(
                    "kept-outputs", g.label, name, f"outputs changed from {outputs} to {now}"
                )
        for node in g:
            if node.name in before:
                continue
            if not is_reserved_name(node.name):
                yield Problem(
                    "reserved-suffix",
                    g.label,
                    node.name,
                    "a new node lacks the reserved suffix (use graph.new_name)",
                )
            if not node.origin:
                yield Problem(
                    "origin-attr",
                    g.label,
                    node.name,
                    "a new node has no origin (the original nodes it replaces)",
                )


def topo_order(graph: Graph) -> list[Node]:
    """Kahn's algorithm, smallest load position first; only nodes not on or after a cycle."""
    nodes = graph.nodes
    position = {n.name: i for i, n in enumerate(nodes)}
    indegree = [0] * len(nodes)
    for i, node in enumerate(nodes):
        indegree[i] = sum(1 for p in _producers(graph, node) if p in position)
    ready = [i for i, d in enumerate(indegree) if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        node = nodes[heapq.heappop(ready)]
        order.append(node)
        for user, count in _users(graph, node):
            j = position[user.name]
            indegree[j] -= count
            if indegree[j] == 0:
                heapq.heappush(ready, j)
    return order


def find_cycle(graph: Graph, done: set[str]) -> list[str]:
    """A cycle among the nodes Kahn could not order, in edge direction, from its first node."""
    left = [n for n in graph if n.name not in done]
    seen: dict[str, int] = {}
    path: list[str] = []
    current = left[0]
    while current.name not in seen:
        seen[current.name] = len(path)
        path.append(current.name)
        producer = next(p for p in _producers(graph, current) if p in graph and p not in done)
        current = graph[producer]
    cycle = path[seen[current.name] :]
    cycle.reverse()
    position = {n.name: i for i, n in enumerate(left)}
    first = min(range(len(cycle)), key=lambda i: position[cycle[i]])  # stable across runs
    cycle = cycle[first:] + cycle[:first]
    return [*cycle, cycle[0]]


def _producers(graph: Graph, node: Node) -> Iterator[str]:
    back = node.op in _BACK_EDGE_CONSUMERS
    for ref in node._inputs:
        if back:
            producer = graph.get(ref.node)
            if producer is not None and producer.op in _BACK_EDGE_PRODUCERS:
                continue
        yield ref.node
    yield from node._control


def _users(graph: Graph, node: Node) -> Iterator[tuple[Node, int]]:
    """Each consumer with its number of edges from ``node`` (the index holds the counts)."""
    back = node.op in _BACK_EDGE_PRODUCERS
    for name, count in graph._data_users.get(node.name, {}).items():
        user = graph[name]
        if not (back and user.op in _BACK_EDGE_CONSUMERS):
            yield user, count
    for name, count in graph._control_users.get(node.name, {}).items():
        yield graph[name], count


def _names(g: Graph) -> Iterator[Problem]:
    for key, node in g._nodes.items():
        if key != node.name or node.graph is not g:
            yield Problem("unique-names", g.label, key, f"indexed as {key!r} but is {node!r}")
        if isinstance(g, FunctionGraph) and key in g.args:
            yield Problem("unique-names", g.label, key, "a node has a function argument's name")


def _consumer_index(g: Graph) -> Iterator[Problem]:
    data: dict[str, dict[str, int]] = {}
    control: dict[str, dict[str, int]] = {}
    for node in g:
        for ref in node._inputs:
            users = data.setdefault(ref.node, {})
            users[node.name] = users.get(node.name, 0) + 1
        for ctrl in node._control:
            users = control.setdefault(ctrl, {})
            users[node.name] = users.get(node.name, 0) + 1
    for kind, want, have in (("data", data, g._data_users), ("control", control, g._control_users)):
        if want != have:
            bad = sorted(k for k in {*want, *have} if want.get(k) != have.get(k))
            yield Problem("consumer-index", g.label, bad[0], f"{kind} consumer index out of sync")


def _inputs(g: Graph, node: Node) -> Iterator[Problem]:
    for position, ref in enumerate(node._inputs):
        problem = _check_ref(g, ref)
        if problem is not None:
            check, message = problem
            yield Problem(check, g.label, node.name, f"input {position} {str(ref)!r}: {message}")
    for ctrl in node._control:
        if ctrl not in g:
            message = f"control input '^{ctrl}' names no node"
            yield Problem("control-exists", g.label, node.name, message)


def _rets(g: FunctionGraph) -> Iterator[Problem]:
    for key, ref in g.ret.items():
        problem = _check_ref(g, ref)
        if problem is not None:
            message = f"ret {key!r} = {str(ref)!r}: {problem[1]}"
            yield Problem("ret-exists", g.label, ref.node, message)
    for key, name in g.control_ret.items():
        if name not in g:
            yield Problem("ret-exists", g.label, name, f"control_ret {key!r} names no node")


def _check_ref(g: Graph, ref: TensorRef) -> tuple[str, str] | None:
    is_function = isinstance(g, FunctionGraph)
    if isinstance(g, FunctionGraph) and ref.node in g.args:
        if ref.output_arg is not None:
            return "input-syntax", "a function argument is referenced by its name alone"
        return None
    producer = g.get(ref.node)
    if producer is None:
        return "input-exists", "names no node" + (" or argument" if is_function else "")
    if is_function and ref.output_arg is None:
        return "input-syntax", "a node output in a function body needs 'node:output_arg:index'"
    if not is_function and ref.output_arg is not None:
        return "input-syntax", "'node:output_arg:index' is function-body syntax"
    layout = output_layout(producer)
    if layout is None:
        return None
    return _index_problem(producer, ref, layout)


def _index_problem(producer: Node, ref: TensorRef, layout: Layout) -> tuple[str, str] | None:
    if ref.output_arg is None:
        count = sum(len(d) for _, d in layout)
        where = f"{producer.op} has {count} outputs"
    else:
        counts = dict((name, len(d)) for name, d in layout)
        if ref.output_arg not in counts:
            known = ", ".join(counts) or "none"
            return "output-index", f"{producer.op} has no output arg {ref.output_arg!r} ({known})"
        count = counts[ref.output_arg]
        where = f"{producer.op} output arg {ref.output_arg!r} has {count} tensors"
    return None if ref.index < count else ("output-index", where)


def _key(g: Graph) -> str:
    return g.name if isinstance(g, FunctionGraph) else ""


def _outputs(node: Node) -> Outputs:
    layout = output_layout(node)
    return None if layout is None else flat_dtypes(layout)
