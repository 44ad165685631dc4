"""``conv2d_biasadd``: Conv2D + BiasAdd [+ Relu | Relu6] → TF's ``_FusedConv2D``.

GE folds a BiasAdd into the convolution's bias input (``AABiasaddConvFusion``); the TF-side
equivalent that still runs on stock TensorFlow is ``_FusedConv2D`` with ``fused_ops``
``["BiasAdd"]``, ``["BiasAdd", "Relu"]`` or ``["BiasAdd", "Relu6"]``.
"""

from __future__ import annotations

from typing import ClassVar

from tf2npu.graph.fusion.pattern import Op, Var, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.fusion.rules._activation import extend_activation
from tf2npu.graph.fusion.rules._common import checked, string_attr
from tf2npu.graph.fusion.rules._conv import fused_conv_attrs
from tf2npu.graph.ir import Graph, Node

PATTERN = Op(
    "bias_add",
    {"BiasAdd"},
    (Op("conv", {"Conv2D"}, (Var("input"), Var("filter"))), Var("bias")),
)
TAG = "fused_conv2d"


@register_rule
class Conv2dBiasadd(FusionRule):
    """Conv2D followed by BiasAdd, and optionally Relu or Relu6, becomes one ``_FusedConv2D``."""

    name: ClassVar[str] = "conv2d_biasadd"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = ("AABiasaddConvFusion",)
    description: ClassVar[str] = (
        "Conv2D + BiasAdd [+ Relu|Relu6] -> _FusedConv2D (fused_ops BiasAdd[, Relu|Relu6])"
    )
    roots: ClassVar[frozenset[str]] = frozenset({"BiasAdd", "Relu", "Relu6"})

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        if root.op != "BiasAdd":
            return extend_activation(
                graph,
                root,
                fused_op="_FusedConv2D",
                first="BiasAdd",
                activations={"Relu", "Relu6"},
                tag=TAG,
                output_arg="output",
            )
        m = match(graph, root, PATTERN)
        if m is None:
            return None
        conv = m.nodes["conv"]
        # BiasAdd adds along its own data_format's channel axis: it must be the conv's.
        if string_attr(root, "data_format", "NHWC") != string_attr(conv, "data_format", "NHWC"):
            return None
        attrs = fused_conv_attrs(conv, ["BiasAdd"], num_args=1)
        inputs = (m.tensors["input"], m.tensors["filter"], m.tensors["bias"])
        return checked(graph, m, [NewNode(TAG, "_FusedConv2D", inputs, attrs, ("output",))])
