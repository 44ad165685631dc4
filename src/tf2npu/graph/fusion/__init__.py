"""Fusion rules (see :mod:`.registry`) and the helpers they share."""

from tf2npu.graph.fusion.registry import RULES, FusionRule, known_rules, register_rule

__all__ = ["RULES", "FusionRule", "known_rules", "register_rule"]
