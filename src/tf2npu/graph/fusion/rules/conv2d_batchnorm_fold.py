"""``conv2d_batchnorm_fold``: Conv2D + inference FusedBatchNorm [+ Relu | Relu6] → ``_FusedConv2D``.

Only an inference batch norm (``is_training=false``: fixed mean and variance) is a per-channel
affine map that can ride on the convolution; GE's ``ConvBatchnormFusionPass`` folds it, and TF's
``_FusedConv2D`` with ``fused_ops ["FusedBatchNorm"]`` (4 args: scale, offset, mean, variance;
``epsilon`` from the batch norm) is the stock-TensorFlow equivalent. A training batch norm
computes batch statistics and is never folded.
"""

from __future__ import annotations

from typing import ClassVar

from tf2npu.graph.fusion.pattern import Op, Var, dtype_of, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.fusion.rules._activation import extend_activation
from tf2npu.graph.fusion.rules._common import bool_attr, checked, string_attr
from tf2npu.graph.fusion.rules._conv import fused_conv_attrs
from tf2npu.graph.ir import Graph, Node

_BATCH_NORMS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
_PARAMS = ("scale", "offset", "mean", "variance")
PATTERN = Op(
    "batch_norm",
    _BATCH_NORMS,
    (Op("conv", {"Conv2D"}, (Var("input"), Var("filter"))), *(Var(p) for p in _PARAMS)),
)
TAG = "fused_conv2d"


@register_rule
class Conv2dBatchnormFold(FusionRule):
    """Conv2D followed by an inference FusedBatchNorm (and optionally Relu or Relu6)."""

    name: ClassVar[str] = "conv2d_batchnorm_fold"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = ("ConvBatchnormFusionPass",)
    description: ClassVar[str] = (
        "Conv2D + FusedBatchNorm(is_training=false) [+ Relu|Relu6] -> _FusedConv2D "
        "(fused_ops FusedBatchNorm[, Relu|Relu6])"
    )
    roots: ClassVar[frozenset[str]] = _BATCH_NORMS | {"Relu", "Relu6"}

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        if root.op not in _BATCH_NORMS:
            return extend_activation(
                graph,
                root,
                fused_op="_FusedConv2D",
                first="FusedBatchNorm",
                activations={"Relu", "Relu6"},
                tag=TAG,
                output_arg="output",
            )
        if bool_attr(root, "is_training", True):
            return None
        m = match(graph, root, PATTERN)
        if m is None:
            return None
        conv = m.nodes["conv"]
        if string_attr(root, "data_format", "NHWC") != string_attr(conv, "data_format", "NHWC"):
            return None
        # V2/V3 keep scale/offset/mean/variance in U; the fused kernel takes them in T.
        param_dtype = root.attrs.get("U")
        if param_dtype is not None and param_dtype.type != dtype_of(conv):
            return None
        epsilon_attr = root.attrs.get("epsilon")
        epsilon = float(epsilon_attr.f) if epsilon_attr is not None else 0.0001
        attrs = fused_conv_attrs(conv, ["FusedBatchNorm"], num_args=4, epsilon=epsilon)
        inputs = (m.tensors["input"], m.tensors["filter"], *(m.tensors[p] for p in _PARAMS))
        return checked(graph, m, [NewNode(TAG, "_FusedConv2D", inputs, attrs, ("output",))])
