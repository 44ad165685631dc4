"""The ``fusion`` pass: apply the fusion rules switched on by ``fusion_switch_file``.

Runs after placement and precision, so a pattern is matched in the dtype the device will compute
in (casts the precision pass inserted break a pattern, as they do in GE) and only among nodes
placed on the device. Each graph (top level and every function body) is visited once in
topological order; a node is tried as the root of every rule whose ``roots`` hold its op type,
and a fused node a rule creates is tried at once as a root in its turn, which is what makes the
result a fixpoint: the producers of a root are visited before it, so nothing a later rewrite
creates can enable an earlier root. Work is linear in nodes plus edges.

Stats: one counter per rule name (applications; zero when it never fired). A rule the switch
file turned off is still matched, never applied; when it would have fired, an ``info``
diagnostic ``fusion_rule_switched_off`` says how often.
"""

from __future__ import annotations

from collections import Counter

from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import SUPERSEDED
from tf2npu.graph.fusion import RULES, FusionRule, known_rules
from tf2npu.graph.fusion.rewrite import rewrite
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.passes.infra import PassContext, PassInfo, PassResult, register_pass

__all__ = ["FusionPass"]


@register_pass
class FusionPass:
    """Rewrite matched subgraphs into fused ops (see the module docstring)."""

    info = PassInfo(
        "fusion",
        requires=("placement",),
        description=(
            "Apply the named rewrite rules switched on by fusion_switch_file, to a fixpoint; "
            "count each rule's applications and record origin nodes."
        ),
    )

    def run(self, graph: Graph, ctx: PassContext[EngineConfig]) -> PassResult[Graph]:
        cfg = ctx.config
        known_rules()  # registers the rules
        rules = [cls() for cls in RULES.values()]
        by_root: dict[str, list[FusionRule]] = {}
        for rule in rules:
            for op in sorted(rule.roots):
                by_root.setdefault(op, []).append(rule)
        enabled = {rule.name: cfg.fusion.enabled(rule.name) for rule in rules}
        applied: Counter[str] = Counter()
        blocked: Counter[str] = Counter()
        first_blocked: dict[str, str] = {}
        for g in graph.walk():
            for node in g.toposort():
                _visit(g, node, by_root, enabled, applied, blocked, first_blocked)
        for rule in rules:
            if blocked[rule.name]:
                _report_switched_off(cfg, rule, blocked[rule.name], first_blocked[rule.name])
        stats: dict[str, int | float] = {rule.name: applied[rule.name] for rule in rules}
        return PassResult(graph, changed=sum(applied.values()) > 0, stats=stats)


def _visit(
    graph: Graph,
    node: Node | None,
    by_root: dict[str, list[FusionRule]],
    enabled: dict[str, bool],
    applied: Counter[str],
    blocked: Counter[str],
    first_blocked: dict[str, str],
) -> None:
    """Try the rules rooted at ``node``; a fused node is tried next (the loop, not recursion)."""
    while node is not None and SUPERSEDED not in node.meta:
        fused = None
        for rule in by_root.get(node.op, ()):
            fusion = rule.match(graph, node)
            if fusion is None:
                continue
            if not enabled[rule.name]:
                blocked[rule.name] += 1
                first_blocked.setdefault(rule.name, node.name)
                continue
            fused = rewrite(graph, fusion, rule.name)
            applied[rule.name] += 1
            break
        node = fused


def _report_switched_off(cfg: EngineConfig, rule: FusionRule, count: int, first: str) -> None:
    aliases = f" ({', '.join(rule.aliases)})" if rule.aliases else ""
    times = "once" if count == 1 else f"{count} times"
    cfg.diagnostics.info(
        "fusion_rule_switched_off",
        f"fusion rule {rule.name}{aliases} is switched off by fusion_switch_file; it would have "
        f"fused {times}, first at this node",
        node=first,
        fix=f'remove {rule.name!r} (or set it to "on") in fusion_switch_file to fuse',
    )
