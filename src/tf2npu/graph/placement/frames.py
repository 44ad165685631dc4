"""v1 control-flow frames (``tf.compat.v1.while_loop`` without control flow v2).

A v1 loop is a frame: ``Enter`` nodes (attr ``frame_name``) open it, ``Exit`` nodes close it,
and every node reached from inside belongs to it. The adapter offloads a frame whole or not at
all in mixed compute (reference §3.3 step 4), so placement needs each node's frame and each
frame's parent. Frames are computed as TF's ``BuildControlFlowInfo`` does: one breadth-first
walk from the nodes without inputs, over data and control edges, where an ``Enter`` opens a
child of its producer's frame and a node fed by an ``Exit`` is in the parent of the Exit's.
Frames are keyed by name, as in the adapter.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from tf2npu.graph.ir import Graph, Node

__all__ = ["ROOT", "Frames", "build_frames"]

#: The frame of nodes outside every loop.
ROOT = ""
_ENTER = frozenset({"Enter", "RefEnter"})
_EXIT = frozenset({"Exit", "RefExit"})


@dataclass
class Frames:
    """Each node's frame name, each frame's parent, and the members of each frame."""

    frame_of: dict[str, str] = field(default_factory=dict)
    parent: dict[str, str] = field(default_factory=dict)
    members: dict[str, list[str]] = field(default_factory=dict)

    @property
    def has_loops(self) -> bool:
        return bool(self.parent)

    def chain(self, frame: str) -> list[str]:
        """``frame`` and its ancestors, innermost first (the root frame excluded)."""
        out = []
        while frame != ROOT:
            out.append(frame)
            frame = self.parent[frame]
        return out


def build_frames(graph: Graph) -> Frames:
    """The frames of ``graph``'s nodes; a graph without ``Enter`` nodes is all root frame."""
    frames = Frames()
    if not any(node.op in _ENTER for node in graph):
        return frames
    queue: deque[Node] = deque()
    for node in graph:
        if not node.inputs and not node.control_inputs:
            _assign(frames, node, ROOT)
            queue.append(node)
    while queue:
        node = queue.popleft()
        here = frames.frame_of[node.name]
        out = frames.parent.get(here, ROOT) if node.op in _EXIT else here
        for users in (graph.consumers(node), graph.consumers(node, control=True)):
            for user in users:
                if user.name in frames.frame_of:
                    continue
                frame = out
                if user.op in _ENTER:
                    frame = _frame_name(user)
                    frames.parent.setdefault(frame, out)
                _assign(frames, user, frame)
                queue.append(user)
    return frames


def _assign(frames: Frames, node: Node, frame: str) -> None:
    frames.frame_of[node.name] = frame
    frames.members.setdefault(frame, []).append(node.name)


def _frame_name(node: Node) -> str:
    value = node.attrs.get("frame_name")
    name = value.s.decode("utf-8", "replace") if value is not None else ""
    return name or f"<unnamed frame of {node.name}>"
