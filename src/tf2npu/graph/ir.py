"""The graph IR: a mutable view of a ``GraphDef`` and its function library.

Nodes keep their proto ``AttrValue``s untouched, so an unchanged graph exports bit-exactly.
Function bodies (``tf.function``, while/cond v2 branches) are :class:`FunctionGraph`s that
passes walk like the top level (``graph.walk()``). Every mutator keeps the consumer index in
sync; edges are by node name.

>>> g = Graph()
>>> x = g.add_node("x", "Placeholder")
>>> y = g.add_node("y", "Identity", inputs=[x.output()])
>>> [n.name for n in g.consumers(x)]
['y']
>>> z = g.add_node(g.new_name("y", "cast"), "Cast", inputs=[x.output()], origin=["y"])
>>> g.replace_all_uses(x.output(), z.output())
1
>>> z.name, y.inputs[0].node
('y/_tf2npu_cast', 'y/_tf2npu_cast')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tf2npu.errors import GraphError, InternalError

__all__ = [
    "ORIGIN_ATTR",
    "RESERVED_SUFFIX",
    "FunctionGraph",
    "Graph",
    "Node",
    "TensorRef",
    "is_reserved_name",
]

#: Every node a pass creates is named ``<base>/_tf2npu_<tag>`` (optionally ``_<n>``).
RESERVED_SUFFIX = "/_tf2npu_"
#: List attr (of original node names) written on export for nodes a pass created.
ORIGIN_ATTR = "_tf2npu_origin"

_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]*")
_RESERVED = re.compile(re.escape(RESERVED_SUFFIX) + r"[A-Za-z0-9_]+$")


def is_reserved_name(name: str) -> bool:
    """Whether ``name`` ends with the reserved suffix that marks pass-created nodes."""
    return _RESERVED.search(name) is not None


@dataclass(frozen=True, slots=True)
class TensorRef:
    """One output of a node (or a function argument).

    In a GraphDef ``index`` is the flat output index and ``output_arg`` is ``None``
    (``"x"``, ``"x:1"``). In a function body a node output is named by its output argument
    and the index inside it (``"x:output:0"`` → ``TensorRef("x", 0, "output")``); a function
    argument is referenced by its name alone (``TensorRef("arg", 0)``).
    """

    node: str
    index: int = 0
    output_arg: str | None = None

    def __str__(self) -> str:
        if self.output_arg is not None:
            return f"{self.node}:{self.output_arg}:{self.index}"
        return self.node if self.index == 0 else f"{self.node}:{self.index}"

    @classmethod
    def parse(cls, text: str) -> TensorRef:
        """Parses either syntax; raises :class:`GraphError` for a malformed or control input."""
        parts = text.split(":")
        bad = not parts[0] or parts[0].startswith("^") or len(parts) > 3
        if not bad and len(parts) > 1:
            bad = not parts[-1].isdigit() or (len(parts) == 3 and not parts[1])
        if bad:
            raise GraphError(
                f"malformed data input {text!r}: expected 'node', 'node:index' "
                "or (in a function body) 'node:output_arg:index'"
            )
        if len(parts) == 1:
            return cls(parts[0])
        if len(parts) == 2:
            return cls(parts[0], int(parts[1]))
        return cls(parts[0], int(parts[2]), parts[1])


class Node:
    """One op. ``inputs``/``control_inputs`` change only through the graph's mutators."""

    __slots__ = (
        "_control",
        "_inputs",
        "_name",
        "attrs",
        "device",
        "extra",
        "graph",
        "meta",
        "op",
        "origin",
    )

    def __init__(
        self,
        graph: Graph,
        name: str,
        op: str,
        *,
        device: str = "",
        attrs: dict[str, Any] | None = None,
        origin: Iterable[str] = (),
    ) -> None:
        self.graph = graph
        self._name = name
        self.op = op
        self.device = device
        #: attr name -> ``AttrValue`` proto, kept as loaded (never converted).
        self.attrs: dict[str, Any] = attrs if attrs is not None else {}
        #: Free for passes; never exported.
        self.meta: dict[str, Any] = {}
        #: Original node names this node replaces; non-empty for pass-created nodes.
        self.origin: tuple[str, ...] = tuple(origin)
        #: The loaded ``NodeDef`` when it has fields the IR does not model (debug info, types).
        self.extra: Any = None
        self._inputs: list[TensorRef] = []
        self._control: list[str] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def inputs(self) -> tuple[TensorRef, ...]:
        return tuple(self._inputs)

    @property
    def control_inputs(self) -> tuple[str, ...]:
        return tuple(self._control)

    def output(self, index: int = 0, output_arg: str | None = None) -> TensorRef:
        """A reference to one of this node's outputs."""
        return TensorRef(self._name, index, output_arg)

    def set_input(self, position: int, ref: TensorRef) -> Node:
        """Rewires data input ``position``; returns the node (chains)."""
        self.graph.set_input(self, position, ref)
        return self

    def __repr__(self) -> str:
        return f"Node({self._name!r}, {self.op!r})"


class Graph:
    """A top-level graph: nodes in load order, plus ``functions`` (the library)."""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        # producer name -> {consumer name: number of edges}, data and control kept apart.
        # _taken: names new_name gave out (a name may be taken before its node is added).
        self._data_users: dict[str, dict[str, int]] = {}
        self._control_users: dict[str, dict[str, int]] = {}
        self._taken: set[str] = set()
        self.functions: dict[str, FunctionGraph] = {}
        #: The loaded proto minus nodes and functions (versions, gradients, debug info).
        self.template: Any = None
        #: Free for passes (per-graph decisions, see :mod:`tf2npu.graph.decisions`); never exported.
        self.meta: dict[str, Any] = {}

    # -- reading --------------------------------------------------------------------
    @property
    def label(self) -> str:
        """How errors name this graph."""
        return "graph"

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes.values())

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self._nodes.values()))

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def __getitem__(self, name: str) -> Node:
        try:
            return self._nodes[name]
        except KeyError:
            raise KeyError(f"no node {name!r} in {self.label}") from None

    def get(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def walk(self) -> Iterator[Graph]:
        """This graph, then every function body (library order)."""
        yield self
        yield from self.functions.values()

    def has_source(self, name: str) -> bool:
        """Whether ``name`` can be an edge's producer (a node; a function also has args)."""
        return name in self._nodes

    def consumers(self, node: Node | str, *, control: bool = False) -> list[Node]:
        """Nodes reading any output of ``node`` (or, with ``control``, its control edge)."""
        name = node if isinstance(node, str) else node.name
        users = (self._control_users if control else self._data_users).get(name, {})
        return [self._nodes[u] for u in users]

    def has_readers(self, name: str) -> bool:
        """Whether anything reads node ``name``: a data or control edge (or a function return)."""
        return bool(self._readers(name))

    def uses(self, ref: TensorRef) -> list[tuple[Node, int]]:
        """Every (consumer, input position) reading exactly ``ref``."""
        found: list[tuple[Node, int]] = []
        for user in self.consumers(ref.node):
            found.extend((user, i) for i, r in enumerate(user._inputs) if r == ref)
        return found

    # -- names and provenance -------------------------------------------------------
    def new_name(self, base: str, tag: str) -> str:
        """A fresh name ``<base>/_tf2npu_<tag>[_<n>]``, never used before in this graph."""
        if not _TAG.fullmatch(tag):
            raise ValueError(f"name tag {tag!r} must match {_TAG.pattern}")
        stem = f"{base}{RESERVED_SUFFIX}{tag}"
        name, n = stem, 0
        while name in self._taken or self.has_source(name):
            n += 1
            name = f"{stem}_{n}"
        self._taken.add(name)
        return name

    # -- mutators -------------------------------------------------------------------
    def add_node(
        self,
        name: str,
        op: str,
        inputs: Iterable[TensorRef] = (),
        *,
        control_inputs: Iterable[str] = (),
        attrs: dict[str, Any] | None = None,
        device: str = "",
        origin: Iterable[str] = (),
    ) -> Node:
        """Adds a node (appended to the node order). A taken name is an ``InternalError``."""
        if self.has_source(name):
            raise InternalError(f"{self.label}: a node named {name!r} already exists")
        node = Node(self, name, op, device=device, attrs=attrs, origin=origin)
        self._nodes[name] = node
        for ref in inputs:
            self._link(node, ref)
        for ctrl in control_inputs:
            self.add_control_input(node, ctrl)
        return node

    def set_input(self, node: Node, position: int, ref: TensorRef) -> Graph:
        """Replaces data input ``position`` of ``node`` by ``ref``."""
        old = node._inputs[position]
        node._inputs[position] = ref
        _drop(self._data_users, old.node, node.name)
        _bump(self._data_users, ref.node, node.name)
        return self

    def set_inputs(self, node: Node, refs: Iterable[TensorRef]) -> Graph:
        """Replaces all data inputs of ``node``."""
        for old in node._inputs:
            _drop(self._data_users, old.node, node.name)
        node._inputs = []
        for ref in refs:
            self._link(node, ref)
        return self

    def add_input(self, node: Node, ref: TensorRef) -> Graph:
        """Appends a data input to ``node``."""
        self._link(node, ref)
        return self

    def add_control_input(self, node: Node, producer: str) -> Graph:
        """Adds ``^producer`` to ``node`` (no-op if present)."""
        if producer not in node._control:
            node._control.append(producer)
            _bump(self._control_users, producer, node.name)
        return self

    def remove_control_input(self, node: Node, producer: str) -> Graph:
        if producer in node._control:
            node._control.remove(producer)
            _drop(self._control_users, producer, node.name)
        return self

    def replace_all_uses(
        self, old: TensorRef, new: TensorRef, *, exclude: Iterable[Node | str] = ()
    ) -> int:
        """Points every reader of ``old`` at ``new``; returns how many inputs changed.

        The node producing ``new`` is never rewired (it typically reads ``old`` itself:
        insert-after), nor are the nodes in ``exclude``.
        """
        skip = {new.node, *(n if isinstance(n, str) else n.name for n in exclude)}
        changed = 0
        for user, position in self.uses(old):
            if user.name not in skip:
                self.set_input(user, position, new)
                changed += 1
        return changed

    def erase_node(self, node: Node | str, *, force: bool = False) -> Graph:
        """Removes a node; refuses while anything reads it unless ``force`` (edges then dangle).

        Raises:
            InternalError: the node is still consumed (the message names a consumer).
        """
        target = self[node] if isinstance(node, str) else node
        name = target.name
        if not force:
            readers = self._readers(name)
            if readers:
                raise InternalError(
                    f"{self.label}: cannot erase {name!r}: still read by {readers[0]!r}"
                    f"{f' and {len(readers) - 1} more' if len(readers) > 1 else ''}; "
                    "rewire its consumers first (replace_all_uses) or pass force=True"
                )
        for ref in target._inputs:
            _drop(self._data_users, ref.node, name)
        for ctrl in target._control:
            _drop(self._control_users, ctrl, name)
        target._inputs, target._control = [], []
        del self._nodes[name]
        return self

    def _readers(self, name: str) -> list[str]:
        return [*self._data_users.get(name, {}), *self._control_users.get(name, {})]

    def _link(self, node: Node, ref: TensorRef) -> None:
        node._inputs.append(ref)
        _bump(self._data_users, ref.node, node.name)

    # -- order ----------------------------------------------------------------------
    def toposort(self) -> list[Node]:
        """Nodes with producers first (ties keep load order); v1 loop back edges ignored.

        Raises:
            GraphError: the graph has a cycle (the message names a node on it).
        """
        from tf2npu.graph.lint import find_cycle, topo_order

        order = topo_order(self)
        if len(order) != len(self._nodes):
            cycle = find_cycle(self, {n.name for n in order})
            raise GraphError(f"{self.label} has a cycle through {cycle[0]!r}: {' -> '.join(cycle)}")
        return order

    # -- checks and protos ----------------------------------------------------------
    def lint(self, baseline: object | None = None) -> None:
        """Checks this graph and every function body; see :mod:`tf2npu.graph.lint`.

        ``baseline`` is a :class:`~tf2npu.graph.lint.Signature` taken before the passes
        (typed ``object`` to match the pass manager's ``LintableGraph`` protocol).

        Raises:
            LintError: (an ``InternalError``) naming the check, the graph and the node.
        """
        from tf2npu.graph.lint import Signature, lint

        if baseline is not None and not isinstance(baseline, Signature):
            raise TypeError(f"lint baseline must be a Signature, not {type(baseline).__name__}")
        lint(self, baseline)

    def validate(self) -> Graph:
        """The structural lint checks for a graph given by the user: failures are user errors.

        Raises:
            GraphError: naming the check, the graph and the node.
        """
        from tf2npu.graph.lint import validate

        validate(self)
        return self

    @classmethod
    def from_graph_def(cls, graph_def: Any) -> Graph:
        """The IR of a ``GraphDef`` (copied first; the argument is not kept)."""
        from tf2npu.graph._proto import graph_from_proto

        return graph_from_proto(graph_def)

    def to_graph_def(self) -> Any:
        """A new ``GraphDef`` (with the library); pass-created nodes get :data:`ORIGIN_ATTR`."""
        from tf2npu.graph._proto import graph_to_proto

        return graph_to_proto(self)


class FunctionGraph(Graph):
    """A ``FunctionDef`` body: nodes plus the argument names and the ``ret`` mapping."""

    def __init__(self, name: str, parent: Graph | None = None) -> None:
        super().__init__()
        self.name = name
        self.parent = parent
        #: Input argument names (referenced by name from the body).
        self.args: tuple[str, ...] = ()
        #: Output argument name -> the tensor it returns.
        self.ret: dict[str, TensorRef] = {}
        #: Control output name -> node name.
        self.control_ret: dict[str, str] = {}

    @property
    def label(self) -> str:
        return f"function {self.name!r}"

    def has_source(self, name: str) -> bool:
        return name in self._nodes or name in self.args

    def _readers(self, name: str) -> list[str]:
        readers = super()._readers(name)
        readers += [f"ret {k!r}" for k, r in self.ret.items() if r.node == name]
        readers += [f"control_ret {k!r}" for k, n in self.control_ret.items() if n == name]
        return readers

    def returns(self, name: str) -> bool:
        """Whether a ``ret`` or ``control_ret`` entry names node ``name``."""
        return any(r.node == name for r in self.ret.values()) or name in self.control_ret.values()

    def uses_in_ret(self, ref: TensorRef) -> list[str]:
        return [k for k, r in self.ret.items() if r == ref]

    def replace_all_uses(
        self, old: TensorRef, new: TensorRef, *, exclude: Iterable[Node | str] = ()
    ) -> int:
        """As :meth:`Graph.replace_all_uses`, and the function's ``ret`` entries too."""
        changed = super().replace_all_uses(old, new, exclude=exclude)
        for key in self.uses_in_ret(old):
            self.ret[key] = new
            changed += 1
        return changed


def _bump(index: dict[str, dict[str, int]], producer: str, user: str) -> None:
    users = index.setdefault(producer, {})
    users[user] = users.get(user, 0) + 1


def _drop(index: dict[str, dict[str, int]], producer: str, user: str) -> None:
    users = index.get(producer)
    if users is None or user not in users:
        return
    if users[user] > 1:
        users[user] -= 1
    else:
        del users[user]
        if not users:
            del index[producer]
