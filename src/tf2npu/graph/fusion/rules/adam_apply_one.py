"""``adam_apply_one``: BERT's Adam update without weight decay → NPU op ``AdamApplyOne``.

GE matches this math with the built-in rules ``AdamApplyOneRuleCond1``..``Cond4`` (operand
orders); see :mod:`._adam` for the pattern.
"""

from __future__ import annotations

from typing import ClassVar

from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion
from tf2npu.graph.fusion.rules._adam import adam_fusion, pattern
from tf2npu.graph.ir import Graph, Node

PATTERN = pattern(decay=False)


@register_rule
class AdamApplyOne(FusionRule):
    """next_m, next_v and next_param of one variable become one ``AdamApplyOne``."""

    name: ClassVar[str] = "adam_apply_one"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = tuple(f"AdamApplyOneRuleCond{i}" for i in range(1, 5))
    description: ClassVar[str] = (
        "BERT Adam: next_m, next_v, next_m / (sqrt(next_v) + eps), param - lr * update "
        "-> AdamApplyOne (NPU op; new v, m, var feed the graph's Assigns)"
    )
    roots: ClassVar[frozenset[str]] = frozenset({"Sub"})

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        return adam_fusion(graph, root, PATTERN, "AdamApplyOne", "adam_apply_one")
