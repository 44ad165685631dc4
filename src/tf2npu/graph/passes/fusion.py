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
diagnostic ``fusion_rule_switched_off`` says how often. Every application is recorded as a
:class:`~tf2npu.graph.decisions.FusionInstance` under ``graph.meta[FUSION_INSTANCES]``; an
instance a trial's override (``TF2NPU_FUSION_INSTANCES``) turned off is recorded under
``graph.meta[FUSIONS_OFF]`` instead, with an ``info`` diagnostic ``fusion_instance_switched_off``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tf2npu.config.env import FUSION_INSTANCES_ENV
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import FUSION_INSTANCES, FUSIONS_OFF, SUPERSEDED, FusionInstance
from tf2npu.graph.fusion import RULES, FusionRule, known_rules
from tf2npu.graph.fusion.rewrite import Fusion, rewrite
from tf2npu.graph.ir import FunctionGraph, Graph, Node
from tf2npu.graph.passes.infra import PassContext, PassInfo, PassResult, register_pass

__all__ = ["FusionPass", "client_name"]


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
        state = _State(cfg, by_root, {rule.name: cfg.fusion.enabled(rule.name) for rule in rules})
        for g in graph.walk():
            for node in g.toposort():
                state.visit(g, node)
        for rule in rules:
            if state.blocked[rule.name]:
                _report_switched_off(cfg, rule, state.blocked[rule.name], state.first[rule.name])
        graph.meta[FUSION_INSTANCES] = state.instances
        graph.meta[FUSIONS_OFF] = state.off
        applied = Counter(instance.rule for instance in state.instances)
        stats: dict[str, int | float] = {rule.name: applied[rule.name] for rule in rules}
        return PassResult(graph, changed=bool(state.instances), stats=stats)


def client_name(graph: Graph, node: Node) -> str:
    """The client node ``node`` stands for, as instance roots and fault specs name it.

    A node a pass made (a float16 clone, an earlier fused node) stands for the first node of its
    origin; a node of a function body is named ``<function>:<node>``.
    """
    return _qualified(graph, node.origin[0] if node.origin else node.name)


def _qualified(graph: Graph, name: str) -> str:
    return f"{graph.name}:{name}" if isinstance(graph, FunctionGraph) else name


@dataclass
class _State:
    """What one run of the pass has found so far."""

    cfg: EngineConfig
    by_root: dict[str, list[FusionRule]]
    enabled: dict[str, bool]
    instances: list[FusionInstance] = field(default_factory=list)
    off: list[FusionInstance] = field(default_factory=list)
    blocked: Counter[str] = field(default_factory=Counter)
    first: dict[str, str] = field(default_factory=dict)

    def visit(self, graph: Graph, node: Node | None) -> None:
        """Try the rules rooted at ``node``; a fused node is tried next (a loop, no recursion)."""
        while node is not None and SUPERSEDED not in node.meta:
            fused = None
            for rule in self.by_root.get(node.op, ()):
                fusion = rule.match(graph, node)
                if fusion is None or not self._allowed(graph, rule, fusion):
                    continue
                fused = rewrite(graph, fusion, rule.name)
                self.instances.append(_instance(graph, rule.name, fusion, fused.name))
                break
            node = fused

    def _allowed(self, graph: Graph, rule: FusionRule, fusion: Fusion) -> bool:
        root = fusion.match.root
        if not self.enabled[rule.name]:
            self.blocked[rule.name] += 1
            self.first.setdefault(rule.name, root.name)
            return False
        if self.cfg.fusion.allows(rule.name, client_name(graph, root)):
            return True
        self.off.append(_instance(graph, rule.name, fusion, ""))
        source = self.cfg.fusion.override.source or FUSION_INSTANCES_ENV
        self.cfg.diagnostics.info(
            "fusion_instance_switched_off",
            f"fusion rule {rule.name} is switched off at this root by {source}",
            node=root.name,
            fix="remove the entry from that file to fuse here",
        )
        return False


def _instance(graph: Graph, rule: str, fusion: Fusion, fused: str) -> FusionInstance:
    nodes: dict[str, None] = {}
    backward = [graph[n] for n in fusion.gradient.nodes] if fusion.gradient is not None else []
    for node in (fusion.match.root, *fusion.match.interior(), *backward):
        for name in node.origin or (node.name,):
            nodes.setdefault(_qualified(graph, name), None)
    root = fusion.match.root
    function = graph.name if isinstance(graph, FunctionGraph) else ""
    return FusionInstance(rule, client_name(graph, root), tuple(nodes), fused, root.name, function)


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
