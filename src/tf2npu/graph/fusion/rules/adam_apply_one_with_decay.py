"""``adam_apply_one_with_decay``: BERT's Adam update with weight decay → ``AdamApplyOneWithDecay``.

The update gains ``+ weight_decay_rate * param`` before the learning rate scales it; GE matches
it with ``AdamApplyOneWithDecayRuleCond1``..``Cond5``. See :mod:`._adam` for the pattern.
"""

from __future__ import annotations

from typing import ClassVar

from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion
from tf2npu.graph.fusion.rules._adam import adam_fusion, pattern
from tf2npu.graph.ir import Graph, Node

PATTERN = pattern(decay=True)


@register_rule
class AdamApplyOneWithDecay(FusionRule):
    """The decayed Adam update of one variable becomes one ``AdamApplyOneWithDecay``."""

    name: ClassVar[str] = "adam_apply_one_with_decay"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = tuple(
        f"AdamApplyOneWithDecayRuleCond{i}" for i in range(1, 6)
    )
    description: ClassVar[str] = (
        "BERT Adam with weight decay: ... + weight_decay * param before the learning rate "
        "-> AdamApplyOneWithDecay (NPU op)"
    )
    roots: ClassVar[frozenset[str]] = frozenset({"Sub"})

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        return adam_fusion(
            graph, root, PATTERN, "AdamApplyOneWithDecay", "adam_apply_one_with_decay"
        )
