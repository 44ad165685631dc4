"""Structural checks of a graph and the pass contract (DESIGN §3: names and outputs survive).

``lint`` runs after a pass: a failure is a bug (``LintError``, an ``InternalError``).
``validate`` runs the structural checks on a graph the user gave: a failure is a ``GraphError``.
Each problem names its check (a stable string, see ``CHECKS``), the graph and the node.

``races`` is the lint of a user's graph for one run (its roots and feeds): a variable read and
assigned in the run with no path ordering the read and the write (:class:`Race`). It is a
warning about the user's graph, not a pass contract: ``tf2npu run``, ``graph inspect`` and
``doctor`` report it (docs/graph-inspect.md, "Variable races").
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping
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

RACE_CHECK = "variable_race"
"""The stable name of the race lint (a diagnostic code and a doctor symptom)."""

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


# -- variable races ---------------------------------------------------------------------------

_RESOURCE_VARIABLES = frozenset({"VarHandleOp"})
_REF_VARIABLES = frozenset({"VariableV2", "Variable", "TemporaryVariable"})
#: Ops that forward a variable's handle (or ref) unchanged: the variable flows on through them.
_FORWARD = frozenset(
    {"Identity", "RefIdentity", "Enter", "RefEnter", "Switch", "RefSwitch", "Merge", "RefMerge",
     "Exit", "RefExit", "NextIteration", "RefNextIteration"}
)  # fmt: skip
#: Ops that touch a variable without reading its value.
_NOT_READS = frozenset(
    {"VarIsInitializedOp", "IsVariableInitialized", "VariableShape", "DestroyResourceOp",
     "DestroyTemporaryVariable"}
)  # fmt: skip
#: Ops whose input 0 is the variable they assign (the others are values they read).
_ASSIGNS = frozenset(
    {"Assign", "AssignAdd", "AssignSub", "AssignVariableOp", "AssignAddVariableOp",
     "AssignSubVariableOp", "CountUpTo", "ResourceCountUpTo", "ScatterUpdate", "ScatterAdd",
     "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMin", "ScatterMax", "ScatterNdUpdate",
     "ScatterNdAdd", "ScatterNdSub", "ResourceScatterUpdate", "ResourceScatterAdd",
     "ResourceScatterSub", "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMin",
     "ResourceScatterMax", "ResourceScatterNdUpdate", "ResourceScatterNdAdd",
     "ResourceScatterNdSub"}
)  # fmt: skip
RACE_FIX = (
    "order the read and the write: build one under tf.control_dependencies([the other]), e.g. "
    "`with tf.control_dependencies([train_op]): inc = global_step.assign_add(1)`"
)


def is_assign(op: str) -> bool:
    """Whether ``op`` writes the variables it takes as handles or refs (an optimizer's apply
    ops write every slot they take, in one op)."""
    return op in _ASSIGNS or ("Apply" in op and op.startswith(("Apply", "Resource", "Sparse")))


@dataclass(frozen=True)
class Race:
    """Variable ``variable`` is read by ``read`` and assigned by ``write`` in one run, and no
    path (data or control) orders them: the value read depends on the op schedule."""

    variable: str
    read: str
    read_op: str
    write: str
    write_op: str

    def message(self, where: Callable[[str], str] = lambda name: "") -> str:
        """One sentence; ``where`` gives a node's source line (``file:line``, or "")."""

        def node(name: str, op: str) -> str:
            line = where(name)
            return f"{name!r} ({op}{', ' + line if line else ''})"

        return (
            f"variable {self.variable!r} is read by {node(self.read, self.read_op)} and "
            f"assigned by {node(self.write, self.write_op)} in the same run, with nothing "
            "ordering them: the value read depends on the op schedule"
        )


def sinks(graph: Graph) -> list[str]:
    """The roots of a graph file's run (it names no fetches): the nodes nothing reads, less
    the variables' initializers (a run is a step, not the initialization) and the reads each
    variable makes of itself when it is built (``w/Read/ReadVariableOp``, ``w/read``)."""
    found = []
    for node in graph:
        if graph.has_readers(node.name) or node.op in _NOT_READS:
            continue
        if _initializes(graph, node) or _own_read(graph, node):
            continue
        if (
            node.op == "NoOp"
            and node._control
            and all(_initializes(graph, graph[c]) for c in node._control if c in graph)
        ):
            continue  # tf.global_variables_initializer()
        found.append(node.name)
    return found


def _own_read(graph: Graph, node: Node) -> bool:
    """Whether ``node`` reads a variable directly (``w/Read/ReadVariableOp``, ``w/read``)."""
    if node.op not in ("ReadVariableOp", "Identity") or not node._inputs:
        return False
    source = graph.get(node._inputs[0].node)
    return source is not None and source.op in _RESOURCE_VARIABLES | _REF_VARIABLES


def _initializes(graph: Graph, node: Node) -> bool:
    """Whether ``node`` is the assign a variable made for its own initializer
    (``w/Assign`` of ``w``, by tf.Variable and tf.get_variable)."""
    if node.op not in _ASSIGNS or not node._inputs:
        return False
    return node.name.startswith(node._inputs[0].node + "/")


def races(
    graph: Graph, roots: Iterable[str], feeds: Iterable[str] = (), benign: Iterable[str] = ()
) -> list[Race]:
    """The variable races of one run of ``graph``'s top level: ``roots`` are the fetched and
    targeted node names, ``feeds`` the fed tensors (``node:index``; a fed tensor's producer
    does not run for it). One race per variable: its first racing read (in graph order) whose
    value reaches an assign, else the first whose value reaches a root, with the first write it
    races. ``benign`` are reads that race by design and are not reported (the Estimator's
    global-step read, which its hooks fetch knowing it may be either step)."""
    roots = [r for r in roots if r in graph]
    skip = set(benign)
    fed = {_tensor_name(TensorRef.parse(f)) for f in feeds}
    pruned = _pruned(graph, roots, fed)
    touches = [(v, *_touches(graph, v, pruned)) for v in _variables(graph, pruned)]
    touches = [(v, reads, writes) for v, reads, writes in touches if reads and writes]
    if not touches:
        return []
    # a read whose value reaches an assign changes the model; one that reaches only a fetch
    # changes what is shown: the first is named first
    changes = _observed(graph, pruned, fed, [w for _, _, ws in touches for w in ws])
    shown = _observed(graph, pruned, fed, roots)
    events = list(dict.fromkeys(name for _, reads, writes in touches for name in (*reads, *writes)))
    bit = {name: 1 << i for i, name in enumerate(events)}
    before = _ancestors(graph, pruned, events)
    found = []
    for variable, reads, writes in touches:
        ordered = [r for r in reads if r in changes] + [r for r in reads if r not in changes]
        pairs = (
            Race(variable, r, graph[r].op, w, graph[w].op)
            for r in ordered
            if (r in changes or r in shown) and r not in skip
            for w in writes
            if r != w and not before[w] & bit[r] and not before[r] & bit[w]
        )
        race = next(pairs, None)
        if race is not None:
            found.append(race)
    return found


def _tensor_name(ref: TensorRef) -> str:
    return f"{ref.node}:{ref.index}"


def _pruned(graph: Graph, roots: Iterable[str], fed: set[str]) -> set[str]:
    """What a run of ``roots`` executes: their ancestors, not through fed tensors."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        node = graph[name]
        stack.extend(r.node for r in node._inputs if _tensor_name(r) not in fed)
        stack.extend(node._control)
    return seen


def _variables(graph: Graph, pruned: set[str]) -> list[str]:
    ops = _RESOURCE_VARIABLES | _REF_VARIABLES
    return [n.name for n in graph if n.name in pruned and n.op in ops]


def _touches(graph: Graph, variable: str, pruned: set[str]) -> tuple[list[str], list[str]]:
    """The nodes of the run that read and that assign ``variable``.

    A resource variable is read when an op takes its handle and is not an assign (a
    ``ReadVariableOp`` snapshots the value). A ref variable's ``Identity`` aliases its buffer,
    so its value is read by the ops that consume the alias, which is what they are taken as.
    """
    ref = graph[variable].op in _REF_VARIABLES
    reads: dict[str, None] = {}
    writes: dict[str, None] = {}
    stack = [(variable, False)]  # (node, whether it carries the value rather than the variable)
    seen = set()
    while stack:
        name, value = stack.pop()
        if (name, value) in seen:
            continue
        seen.add((name, value))
        for user in graph.consumers(name):
            if user.name not in pruned or user.op in _NOT_READS:
                continue
            positions = {i for i, r in enumerate(user._inputs) if r.node == name}
            if user.op in _FORWARD:
                stack.append((user.name, value or (ref and not user.op.startswith("Ref"))))
            elif value or not is_assign(user.op):
                reads[user.name] = None
            elif user.op not in _ASSIGNS or 0 in positions:
                writes[user.name] = None
            if not value and user.op in _ASSIGNS and positions - {0}:
                reads[user.name] = None  # assigns the variable's value to another (or itself)
    return list(reads), list(writes)


def _observed(graph: Graph, pruned: set[str], fed: set[str], sinks: Iterable[str]) -> set[str]:
    """Nodes whose value reaches a root or an assign by data edges (what a read can change)."""
    seen: set[str] = set()
    stack = list(sinks)
    while stack:
        name = stack.pop()
        if name in seen or name not in pruned:
            continue
        seen.add(name)
        stack.extend(r.node for r in graph[name]._inputs if _tensor_name(r) not in fed)
    return seen


def _ancestors(graph: Graph, pruned: set[str], events: list[str]) -> dict[str, int]:
    """Per event node, the bit set of the events that run before it or are it: bit ``i`` is
    ``events[i]``."""
    bit = {name: 1 << i for i, name in enumerate(events)}
    below: dict[str, int] = {}
    for node in topo_order(graph):
        if node.name in pruned:
            mask = bit.get(node.name, 0)
            for producer in _producers(graph, node):
                mask |= below.get(producer, 0)
            below[node.name] = mask
    return {name: below.get(name, 0) for name in events}
