"""Extending a ``_Fused*`` node by the activation that follows it (shared by three rules).

The fusion pass visits nodes producers first, so a BiasAdd is fused into its MatMul or Conv2D
before the Relu that reads it is visited. The Relu then finds a ``_FusedMatMul`` /
``_FusedConv2D`` node and this helper replaces that node by one with the activation appended to
``fused_ops`` — the same result TF's remapper gives, reached in two linear steps.
"""

from __future__ import annotations

from collections.abc import Collection

from tf2npu.graph.fusion.attrs import AttrFactory, fused_ops
from tf2npu.graph.fusion.pattern import Match
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.fusion.rules._common import checked
from tf2npu.graph.ir import Graph, Node


def extend_activation(
    graph: Graph,
    root: Node,
    *,
    fused_op: str,
    first: str,
    activations: Collection[str],
    tag: str,
    output_arg: str,
) -> Fusion | None:
    """Fuse ``root`` (an activation) into the ``fused_op`` node it reads, if that node holds
    exactly ``[first]`` so far."""
    if root.op not in activations or len(root.inputs) != 1:
        return None
    ref = root.inputs[0]
    producer = graph.get(ref.node)
    if producer is None or producer.op != fused_op or ref.index != 0:
        return None
    if fused_ops(producer) != (first,):
        return None
    make = AttrFactory([producer])
    attrs = dict(producer.attrs)
    attrs["fused_ops"] = make.strings([first, root.op])
    m = Match(root, {"activation": root, "fused": producer})
    step = NewNode(tag, fused_op, producer.inputs, attrs, (output_arg,))
    return checked(graph, m, [step])
