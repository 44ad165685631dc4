"""``softmax_cross_entropy``: a hand-written cross entropy → ``SoftmaxCrossEntropyWithLogits``.

TF1 models often write ``-tf.reduce_sum(labels * tf.log(tf.nn.softmax(logits)), axis=-1)``
(or with ``tf.nn.log_softmax``). GE's ``SoftmaxCrossEntropyWithLogitsPass`` turns such a
subgraph into the fused kernel. The fused op takes the *logits* and returns ``(loss,
backprop)``; output 0 replaces the Neg. It needs rank-2 logits, so the rule fires only when
the graph proves the rank (a matmul upstream, a placeholder shape, ``_output_shapes``).

The rewrite changes numerics on purpose: ``log(softmax(x))`` underflows to ``-inf`` for very
negative logits, the fused kernel does not.
"""

from __future__ import annotations

from typing import ClassVar

from tf2npu.graph.fusion.consts import const_values
from tf2npu.graph.fusion.pattern import Const, Match, Op, Var, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.fusion.rules._common import bool_attr, checked, copy_attrs, rank_of
from tf2npu.graph.ir import Graph, Node


def _pattern(log_probs: Op) -> Op:
    product = Op("mul", {"Mul"}, (Var("labels"), log_probs), commutative=True)
    return Op("neg", {"Neg"}, (Op("sum", {"Sum"}, (product, Const("axis"))),))


PATTERNS = (
    _pattern(Op("log", {"Log"}, (Op("softmax", {"Softmax"}, (Var("logits"),)),))),
    _pattern(Op("log_softmax", {"LogSoftmax"}, (Var("logits"),))),
)
TAG = "softmax_cross_entropy"


@register_rule
class SoftmaxCrossEntropy(FusionRule):
    """``-reduce_sum(labels * log(softmax(logits)), -1)`` becomes one fused kernel."""

    name: ClassVar[str] = "softmax_cross_entropy"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = ("SoftmaxCrossEntropyWithLogitsPass",)
    description: ClassVar[str] = (
        "Neg(Sum(labels * Log(Softmax(logits)), -1)) or the LogSoftmax form -> "
        "SoftmaxCrossEntropyWithLogits (output 0)"
    )
    roots: ClassVar[frozenset[str]] = frozenset({"Neg"})

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        for pattern in PATTERNS:
            m = match(graph, root, pattern)
            if m is not None and self._last_axis_of_matrix(graph, m):
                break
        else:
            return None
        attrs = copy_attrs(m.nodes["mul"], ("T",))
        inputs = (m.tensors["logits"], m.tensors["labels"])
        step = NewNode(TAG, "SoftmaxCrossEntropyWithLogits", inputs, attrs, ("loss", "backprop"))
        return checked(graph, m, [step])

    @staticmethod
    def _last_axis_of_matrix(graph: Graph, m: Match) -> bool:
        total = m.nodes["sum"]
        if bool_attr(total, "keep_dims", False):
            return False
        axis_node = graph[m.tensors["axis"].node]
        axes = const_values(axis_node)
        if axes is None or len(axes) != 1 or axes[0] not in (-1.0, 1.0):
            return False
        return rank_of(graph, m.tensors["logits"]) == 2
