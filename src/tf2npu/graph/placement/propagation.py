"""Steps 4–6 of candidate selection (reference §3.3): frames, edge propagation, Consts.

Starting from every host node (except those of another run, see :mod:`.regions`), one
worklist moves candidates to the host until nothing changes:

* **frames** (mixed compute only): a v1 while frame holding a host node, and every frame
  enclosing it, loses all its candidates — a loop is offloaded whole or not at all;
* **edges**: a candidate that reads from a host node, or feeds a host node, a tensor that
  cannot cross the boundary — a ref tensor into a ref input, a ``DT_STRING``, ``DT_RESOURCE``
  or ``DT_VARIANT`` tensor — moves to the host. Exceptions: an ``Assert`` at either end,
  a ``Const`` producer, string edges when ``iterations_per_loop == 1`` (the GeOp takes and
  returns strings then), and the string outputs of ``IteratorGetNext``/``GetNext`` under
  ``enable_data_pre_proc``.

The adapter judges frames once, before propagation; doing both in one worklist also catches a
frame that propagation splits (which the adapter would leave split and fail on at run time).
Each node enters the worklist at most once and each frame is closed at most once, so the
whole fixpoint is linear in nodes and edges. Finally every pending ``Const`` feeding a device
node is pulled in (step 6); the others stay on the host.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from tf2npu.graph.decisions import Placement
from tf2npu.graph.ir import Graph, Node, TensorRef
from tf2npu.graph.placement.frames import Frames
from tf2npu.graph.placement.reasons import device, host
from tf2npu.graph.placement.regions import GET_NEXT
from tf2npu.graph.placement.tensors import EdgeTypes, input_is_ref

__all__ = ["EdgeRules", "OutEdges", "out_edges", "propagate"]

OutEdges = dict[str, list[tuple[Node, int, TensorRef]]]


def out_edges(graph: Graph) -> OutEdges:
    """Producer name → every (consumer, input position, tensor) reading it; built once."""
    index: OutEdges = {}
    for node in graph:
        for position, ref in enumerate(node.inputs):
            index.setdefault(ref.node, []).append((node, position, ref))
    return index


@dataclass(frozen=True)
class EdgeRules:
    """Which edge kinds may cross the host/device boundary under the run's options."""

    strings_cross: bool
    data_pre_proc: bool
    mixed: bool


def propagate(
    graph: Graph,
    placements: dict[str, Placement],
    *,
    sources: list[str],
    frames: Frames,
    types: EdgeTypes,
    edges: OutEdges,
    rules: EdgeRules,
    pinned: frozenset[str] = frozenset(),
) -> None:
    """Moves candidates to the host to a fixpoint, in place, starting from ``sources``.

    ``pinned`` candidates never move (the ``Iterator`` -> ``IteratorGetNext`` pair under
    ``enable_data_pre_proc``, whose other host users belong to other ``session.run`` calls).
    """
    queue: deque[str] = deque()
    closed: set[str] = set()

    def demote(name: str, placement: Placement) -> None:
        if name in pinned:
            return
        placements[name] = placement
        queue.append(name)

    def close_frames(name: str) -> None:
        for frame in frames.chain(frames.frame_of.get(name, "")):
            if frame in closed:
                return
            closed.add(frame)
            message = f"inside while frame {frame!r} that contains host op {name!r}"
            for member in frames.members.get(frame, ()):
                current = placements.get(member)
                if current is not None and current.device:
                    demote(member, host("frame", message))

    queue.extend(sources)
    while queue:
        name = queue.popleft()
        if rules.mixed and frames.has_loops:
            close_frames(name)
        node = graph[name]
        for user, position, ref in edges.get(name, ()):
            if _on_device(placements, user):
                kind = _crossing(types, node, user, position, ref, rules)
                if kind is not None:
                    demote(
                        user.name,
                        host(f"{kind}_edge", f"reads a {kind} tensor from host op {name!r}"),
                    )
        for position, ref in enumerate(node.inputs):
            producer = graph.get(ref.node)
            if producer is None:
                continue
            if _on_device(placements, producer):
                kind = _crossing(types, producer, node, position, ref, rules)
                if kind is not None:
                    demote(
                        producer.name,
                        host(f"{kind}_edge", f"feeds a {kind} tensor to host op {name!r}"),
                    )


def _crossing(
    types: EdgeTypes, producer: Node, user: Node, position: int, ref: TensorRef, rules: EdgeRules
) -> str | None:
    """The kind of tensor on this edge if it may not cross the boundary, else ``None``."""
    kind = types.kind(ref)
    if kind is None:
        return None
    if kind == "ref":
        return kind if input_is_ref(user, position) else None
    if user.op == "Assert" or producer.op == "Const":
        return None
    if kind == "string" and (
        rules.strings_cross or (rules.data_pre_proc and producer.op in GET_NEXT)
    ):
        return None
    return kind


def pull_consts(placements: dict[str, Placement], pending: list[str], edges: OutEdges) -> None:
    """Step 6: a pending ``Const`` goes down iff it feeds a device node."""
    for name in pending:
        feeds = next(
            (user.name for user, _, _ in edges.get(name, ()) if _on_device(placements, user)),
            None,
        )
        if feeds is not None:
            placements[name] = device("const_pulled", f"feeds device node {feeds!r}")
        elif not edges.get(name):
            placements[name] = host("unread", "Const: read by no node (never runs)")
        else:
            placements[name] = host(
                "not_compiled", "Const: not compiled on its own (feeds no device node)"
            )


def _on_device(placements: dict[str, Placement], node: Node) -> bool:
    placement = placements.get(node.name)
    return placement is not None and placement.device
