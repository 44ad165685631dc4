"""Rewrite lowered nodes into clones behind casts, keeping every original name and signature.

For each lowered node ``N``:

* a clone ``N/_tf2npu_fp16`` (same op and attrs, its float32 type attrs set to the lower
  dtype, ``origin=[N]``) reads, on each float input, the clone of a lowered producer directly,
  else one shared ``Cast`` per producer tensor (``P/_tf2npu_to_fp16``);
* each float output gets one shared cast back (``N/_tf2npu_to_f32``), and
  :func:`~tf2npu.graph.decisions.supersede` hands ``N``'s outputs to the casts back (float
  outputs) or to the clone (other outputs). Readers that stay float32 and fetches of ``N`` are
  thus served in float32, while lowered readers never go through a cast.

Casts only ever read an original tensor (to the lower dtype) or a clone (back to float32), so a
cast never reads another of our casts: there are no ``f32→f16→f32`` pairs to clean up.
A cast back whose only readers are superseded originals stays (it serves fetches of ``N``) but is
not counted as inserted.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT
from tf2npu.graph.decisions import PLACEMENT, PRECISION, SUPERSEDED, Placement, supersede
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef
from tf2npu.graph.precision.classify import Judged
from tf2npu.graph.precision.modes import Mode

__all__ = ["CAST_PLACEMENT", "rewrite"]

#: The placement of the casts this pass inserts (they run next to the node they serve).
CAST_PLACEMENT = Placement(True, 0, "precision_cast", "a cast inserted by the precision pass")


def rewrite(graph: Graph, judged: dict[str, Judged], mode: Mode) -> int:
    """Lower the nodes ``judged`` marks lowered; returns how many inserted casts are read.

    Clone names are reserved before any clone is built, so the order of ``judged`` is free.
    """
    lowered = [name for name, j in judged.items() if j.verdict.lower]
    if not lowered:
        return 0
    rewriter = _Rewriter(graph, mode)
    clone_of = {name: graph.new_name(name, mode.tag) for name in lowered}
    for name in lowered:
        rewriter.clone(graph[name], judged[name], clone_of)
    for name in lowered:
        rewriter.hand_over(graph[name], judged[name], clone_of[name])
    return rewriter.count_read()


class _Rewriter:
    def __init__(self, graph: Graph, mode: Mode) -> None:
        from tensorflow.core.framework import attr_value_pb2

        self.graph = graph
        self.mode = mode
        self.body = isinstance(graph, FunctionGraph)
        self.attr_value: Any = attr_value_pb2.AttrValue
        self.down: dict[TensorRef, TensorRef] = {}  # float32 tensor -> its shared cast down
        self.backs: list[str] = []

    def clone(self, node: Node, judged: Judged, clone_of: dict[str, str]) -> None:
        sig = judged.signature
        inputs = list(node.inputs)
        for position in sig.inputs:
            ref = inputs[position]
            producer = clone_of.get(ref.node)
            if producer is not None:
                inputs[position] = TensorRef(producer, ref.index, ref.output_arg)
            else:
                inputs[position] = self._cast_down(ref, node)
        attrs = dict(node.attrs)
        for name in sig.attrs:
            attrs[name] = self.attr_value(type=self.mode.lower_enum)
        clone = self.graph.add_node(
            clone_of[node.name],
            node.op,
            inputs,
            control_inputs=node.control_inputs,
            attrs=attrs,
            device=node.device,
            origin=[node.name],
        )
        clone.meta[PLACEMENT] = node.meta[PLACEMENT]
        clone.meta[PRECISION] = node.meta[PRECISION]

    def hand_over(self, node: Node, judged: Judged, clone: str) -> None:
        outputs: dict[TensorRef, TensorRef] = {}
        for out in judged.signature.outputs:
            new = out.ref(clone, function_body=self.body)
            if out.is_float:
                new = self._cast(new, node.name, node, "to_f32", self.mode.lower_enum, DT_FLOAT)
                self.backs.append(new.node)
            outputs[out.ref(node.name, function_body=self.body)] = new
        supersede(self.graph, node, outputs, by="precision", rule=judged.verdict.slug)

    def count_read(self) -> int:
        graph = self.graph
        ret = {r.node for r in graph.ret.values()} if isinstance(graph, FunctionGraph) else set()
        read = sum(
            1
            for name in self.backs
            if name in ret or any(SUPERSEDED not in u.meta for u in graph.consumers(name))
        )
        return len(self.down) + read

    def _cast_down(self, ref: TensorRef, reader: Node) -> TensorRef:
        found = self.down.get(ref)
        if found is None:
            tag = f"to_{self.mode.tag}"
            lower = self.mode.lower_enum
            found = self.down[ref] = self._cast(ref, ref.node, reader, tag, DT_FLOAT, lower)
        return found

    def _cast(
        self, ref: TensorRef, base: str, near: Node, tag: str, src: int, dst: int
    ) -> TensorRef:
        """A ``Cast`` of ``ref`` named after ``base``, on the device of ``near``."""
        attrs = {
            "SrcT": self.attr_value(type=src),
            "DstT": self.attr_value(type=dst),
            "Truncate": self.attr_value(b=False),
        }
        name = self.graph.new_name(base, tag)
        cast = self.graph.add_node(
            name, "Cast", [ref], attrs=attrs, device=near.device, origin=[base]
        )
        cast.meta[PLACEMENT] = CAST_PLACEMENT
        return TensorRef(name, 0, "y") if self.body else TensorRef(name)
