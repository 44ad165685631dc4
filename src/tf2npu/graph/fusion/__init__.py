"""Fusion rules (see :mod:`.registry`) and the helpers they share.

The registry knows nothing of the rules; :func:`known_rules` imports them (``fusion/rules/``
registers each rule as it is imported), so the rules and the registry form no import cycle.
"""

from tf2npu.config.names import KnownRules
from tf2npu.graph.fusion.registry import RULES, FusionRule, register_rule

__all__ = ["RULES", "FusionRule", "known_rules", "register_rule"]


def known_rules() -> KnownRules:
    """Every registered rule as ``name -> (category, aliases)`` (what the switch file checks)."""
    import tf2npu.graph.fusion.rules  # noqa: F401  (registers the rules)

    return {name: (rule.category, rule.aliases) for name, rule in RULES.items()}
