"""``matmul_biasadd``: MatMul + BiasAdd [+ Relu] → TF's ``_FusedMatMul``.

GE's ``MatMulBiasAddFusionPass`` folds the bias into the MatMul kernel; TF's own CPU remapper
does the same with ``_FusedMatMul`` (``fused_ops`` ``["BiasAdd"]`` or ``["BiasAdd", "Relu"]``),
which is what we emit so the fused graph still runs on stock TensorFlow.
"""

from __future__ import annotations

from typing import ClassVar

from tf2npu.graph.fusion.attrs import AttrFactory
from tf2npu.graph.fusion.pattern import Op, Var, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.fusion.rules._activation import extend_activation
from tf2npu.graph.fusion.rules._common import checked, copy_attrs
from tf2npu.graph.ir import Graph, Node

PATTERN = Op(
    "bias_add",
    {"BiasAdd"},
    (Op("matmul", {"MatMul"}, (Var("a"), Var("b"))), Var("bias")),
)
TAG = "fused_matmul"


@register_rule
class MatmulBiasadd(FusionRule):
    """MatMul followed by BiasAdd, and optionally Relu, becomes one ``_FusedMatMul``."""

    name: ClassVar[str] = "matmul_biasadd"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = ("MatMulBiasAddFusionPass",)
    description: ClassVar[str] = (
        "MatMul + BiasAdd [+ Relu] -> _FusedMatMul (fused_ops BiasAdd[, Relu])"
    )
    roots: ClassVar[frozenset[str]] = frozenset({"BiasAdd", "Relu"})

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        if root.op == "Relu":
            return extend_activation(
                graph, root, fused_op="_FusedMatMul", first="BiasAdd",
                activations={"Relu"}, tag=TAG, output_arg="product",
            )
        m = match(graph, root, PATTERN)
        if m is None:
            return None
        matmul = m.nodes["matmul"]
        make = AttrFactory([matmul])
        attrs = copy_attrs(matmul, ("T", "transpose_a", "transpose_b"))
        attrs["num_args"] = make.integer(1)
        attrs["fused_ops"] = make.strings(["BiasAdd"])
        attrs["epsilon"] = make.real(0.0001)
        inputs = (m.tensors["a"], m.tensors["b"], m.tensors["bias"])
        return checked(graph, m, [NewNode(TAG, "_FusedMatMul", inputs, attrs, ("product",))])
