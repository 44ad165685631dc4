"""What one engine run decided, as one value: the source of every graph report.

:func:`summarize` reads only the decision contract (:mod:`tf2npu.graph.decisions`), the pass
counters and the run's diagnostics, so the renderers (JSON, terminal, HTML, ``check_result``)
never depend on a pass's internals. Counts cover the live nodes of the top-level graph: function
bodies run inside the node that calls them, which has its own placement.

Where a node runs: once the partition pass has run (``graph.meta[CLUSTERS]`` is set), a node is
on the device exactly when it belongs to a GeOp; a node the placement pass allowed on the device
but that no GeOp holds (full-offload mode keeps a single GeOp) falls back to the host with reason
:data:`OUTSIDE_GEOP`. Before partitioning, the placement decides.

How nodes are counted, one rule everywhere (totals, GeOp table, drawing, JSON): a GeOp's nodes
are its members as the partition made them (:attr:`Cluster.nodes`, the nodes of its GE graph
JSON); the host's are the live nodes outside every GeOp; ``nodes`` is their sum. The nodes the
lowering pass adds inside a GeOp so that the CPU can run it (float32 casts around float16 ops,
expanded fusions) are no GeOp's members: they are counted apart, as ``lowering_nodes``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tf2npu.artifacts.run_summary import PrecisionRow
from tf2npu.config.validate import no_effect_report
from tf2npu.graph.decisions import (
    CLUSTER,
    CLUSTERS,
    FUSION_INSTANCES,
    PLACEMENT,
    PRECISION,
    Cluster,
    Diagnostic,
    FusionInstance,
    Placement,
    PrecisionDecision,
    live_nodes,
)
from tf2npu.graph.engine import EngineRun
from tf2npu.graph.ir import Graph, Node, TensorRef
from tf2npu.graph.report.crossings import Crossing, crossings, sides, user_names

__all__ = [
    "OUTSIDE_GEOP",
    "SCHEMA_VERSION",
    "UNDECIDED",
    "GeOpSummary",
    "GraphSummary",
    "HostOp",
    "summarize",
]

SCHEMA_VERSION = 2
"""Bumped when a key of :meth:`GraphSummary.to_json` changes meaning or disappears (2:
``device_nodes`` counts GeOp members, not the live nodes lowering left in GeOps)."""

OUTSIDE_GEOP = "outside_geop"
"""Host reason of a node the device could run that no GeOp holds."""
UNDECIDED = "undecided"
"""Host reason of a node without a placement (the placement pass did not run)."""


@dataclass(frozen=True, slots=True)
class HostOp:
    """A live node that runs on the host; ``code`` is the ``check_result`` code (0: supported)."""

    name: str
    type: str
    reason: str
    code: int
    message: str


@dataclass(frozen=True, slots=True)
class GeOpSummary:
    """One GeOp: how many nodes it holds and the tensors crossing its boundary."""

    name: str
    nodes: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    sources: tuple[tuple[str, int], ...] = ()
    """Where the input tensors come from: (a host reason or another GeOp's name, tensors)."""
    sinks: tuple[tuple[str, int], ...] = ()
    """Where the output tensors go: (a host reason or another GeOp's name, tensors); a tensor
    read on both sides counts once per side."""


@dataclass(frozen=True)
class GraphSummary:
    """The decisions of one engine run, counted (renderers are in this package)."""

    graph: str
    mix_compile_mode: bool
    precision_mode: str
    nodes: int
    device_nodes: int
    host_nodes: int
    geops: tuple[GeOpSummary, ...]
    host_ops: tuple[HostOp, ...]
    memcpy_edges: int
    memcpy_bytes: int
    casts_inserted: int
    precision: Mapping[str, PrecisionDecision]
    fusions: Mapping[str, int]
    errors: tuple[Diagnostic, ...]
    warnings: tuple[Diagnostic, ...]
    infos: tuple[Diagnostic, ...]
    no_effect: tuple[tuple[str, str], ...]
    pass_seconds: Mapping[str, float]
    skipped_passes: tuple[tuple[str, str], ...] = ()
    partitioned: bool = True
    fusion_instances: tuple[FusionInstance, ...] = ()
    """Every fusion applied, in the order the pass applied them (function bodies included)."""
    precision_ops: tuple[PrecisionRow, ...] = ()
    """Per user op the precision pass judged, its dtype and reason (:mod:`.precision`)."""
    lowering_nodes: int = 0
    """Nodes the lowering pass added inside GeOps to run them on the CPU (no GeOp's members)."""
    crossings: tuple[Crossing, ...] = ()
    """Every tensor crossing a GeOp's boundary, with its ends, dtype and shape."""
    user_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The user's ops behind each pass-made node name this summary mentions."""
    diagnostic_sides: Mapping[str, str] = field(default_factory=dict)
    """Where each error's and warning's node is: its GeOp or host reason (nodes of the graph)."""

    @property
    def fusions_applied(self) -> int:
        return sum(self.fusions.values())

    @property
    def total_seconds(self) -> float:
        return sum(self.pass_seconds.values())

    def host_ops_by_reason(self) -> list[tuple[str, list[HostOp]]]:
        """Host ops grouped by reason, largest group first (ties by reason)."""
        groups: dict[str, list[HostOp]] = {}
        for op in self.host_ops:
            groups.setdefault(op.reason, []).append(op)
        return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object; keys and their meaning are listed in docs/graph-inspect.md."""
        return {
            "schema_version": SCHEMA_VERSION,
            "graph": self.graph,
            "mode": {
                "mix_compile_mode": self.mix_compile_mode,
                "precision_mode": self.precision_mode,
            },
            "nodes": self.nodes,
            "device_nodes": self.device_nodes,
            "host_nodes": self.host_nodes,
            "lowering_nodes": self.lowering_nodes,
            "geops": [
                {
                    "name": g.name,
                    "nodes": g.nodes,
                    "inputs": list(g.inputs),
                    "outputs": list(g.outputs),
                    "sources": dict(g.sources),
                    "sinks": dict(g.sinks),
                }
                for g in self.geops
            ],
            "host_ops": [
                {
                    "name": h.name,
                    "type": h.type,
                    "reason": h.reason,
                    "code": h.code,
                    "message": h.message,
                }
                for h in self.host_ops
            ],
            "memcpy_edges": self.memcpy_edges,
            "memcpy_bytes": self.memcpy_bytes,
            "casts_inserted": self.casts_inserted,
            "precision": {
                name: {"before": d.before, "after": d.after, "reason": d.reason}
                for name, d in self.precision.items()
            },
            "crossings": [
                {
                    "tensor": c.tensor,
                    "from": c.source,
                    "to": c.dest,
                    "dtype": c.dtype,
                    "shape": c.shape,
                }
                for c in self.crossings
            ],
            "fusions": dict(self.fusions),
            "fusion_instances": [f.to_json() for f in self.fusion_instances],
            "errors": [_diagnostic_json(d) for d in self.errors],
            "warnings": [_diagnostic_json(d) for d in self.warnings],
            "infos": [_diagnostic_json(d) for d in self.infos],
            "options_without_effect": [{"name": n, "reason": r} for n, r in self.no_effect],
            "pass_seconds": {name: round(s, 6) for name, s in self.pass_seconds.items()},
            "skipped_passes": [{"name": n, "reason": r} for n, r in self.skipped_passes],
        }


def _diagnostic_json(d: Diagnostic) -> dict[str, str]:
    return {"code": d.code, "message": d.message, "node": d.node, "fix": d.fix}


def summarize(run: EngineRun, graph_label: str = "") -> GraphSummary:
    """Count what ``run`` decided. One walk over the top-level nodes: O(nodes)."""
    from tf2npu.graph.report.precision import user_precision

    graph, cfg = run.graph, run.config
    stats = run.pipeline.stats
    clusters: list[Cluster] | None = graph.meta.get(CLUSTERS)
    partitioned = clusters is not None
    full_offload = not cfg.options.mix_compile_mode
    live = live_nodes(graph)
    host_ops = [_host_op(node, full_offload) for node in live if not _on_device(node, partitioned)]
    precision: dict[str, PrecisionDecision] = {}
    for node in graph:  # superseded nodes too: the decision may sit on the replaced original
        decision = node.meta.get(PRECISION)
        if isinstance(decision, PrecisionDecision) and decision.changed:
            precision[node.name] = decision
    fusion_stats = stats.get("fusion", {})
    fusions = {rule: int(fusion_stats.get(rule, 0)) for rule, on in cfg.fusion.states.items() if on}
    diagnostics = cfg.diagnostics
    reasons = {op.name: op.reason for op in host_ops}
    side = sides(graph, reasons)
    crossing = tuple(crossings(graph, clusters or [], side, unknown=UNDECIDED))
    instances = tuple(graph.meta.get(FUSION_INSTANCES, ()))
    flagged = [*diagnostics.of("error"), *diagnostics.of("warning")]
    mentioned = [
        *(op.name for op in host_ops),
        *(c.tensor for c in crossing),
        *(d.node for d in flagged),
        *(name for f in instances for name in (f.root, *f.nodes)),
    ]
    device_nodes = len(live) - len(host_ops)
    lowering = 0
    if partitioned:
        members = {name for c in clusters or [] for name in c.nodes}
        lowering = sum(1 for n in live if CLUSTER in n.meta and n.name not in members)
        device_nodes = len(members)
    return GraphSummary(
        graph=graph_label,
        mix_compile_mode=cfg.options.mix_compile_mode,
        precision_mode=cfg.options.effective_precision_mode,
        nodes=device_nodes + len(host_ops),
        device_nodes=device_nodes,
        host_nodes=len(host_ops),
        geops=_geops(graph, clusters or [], reasons),
        host_ops=tuple(host_ops),
        memcpy_edges=int(stats.get("partition", {}).get("memcpy_edges", 0)),
        memcpy_bytes=int(stats.get("partition", {}).get("memcpy_bytes", 0)),
        casts_inserted=int(stats.get("precision", {}).get("casts_inserted", 0)),
        precision=precision,
        fusions=fusions,
        errors=tuple(diagnostics.of("error")),
        warnings=tuple(diagnostics.of("warning")),
        infos=tuple(diagnostics.of("info")),
        no_effect=tuple(no_effect_report(cfg.options)),
        pass_seconds=dict(run.pass_seconds),
        skipped_passes=tuple(run.pipeline.skipped),
        partitioned=partitioned,
        fusion_instances=instances,
        precision_ops=tuple(user_precision(graph)),
        lowering_nodes=lowering,
        crossings=crossing,
        user_names=user_names(graph, mentioned),
        diagnostic_sides={d.node: side(d.node) for d in flagged if d.node and side(d.node)},
    )


def _geops(
    graph: Graph, clusters: list[Cluster], reasons: dict[str, str]
) -> tuple[GeOpSummary, ...]:
    """Each GeOp with the host reason or GeOp at the other end of each crossing tensor."""
    known = sides(graph, reasons)

    def side(name: str) -> str:
        return known(name) or UNDECIDED

    out = []
    for c in clusters:
        sources: Counter[str] = Counter(side(TensorRef.parse(t).node) for t in c.inputs)
        sinks: Counter[str] = Counter()
        for tensor in c.outputs:
            readers = {n.name for n, _ in graph.uses(TensorRef.parse(tensor))}
            sinks.update({side(r) for r in readers if r in reasons or _in_other(graph, r, c)})
        out.append(
            GeOpSummary(c.name, len(c.nodes), tuple(c.inputs), tuple(c.outputs),
                        tuple(sources.most_common()), tuple(sinks.most_common()))
        )  # fmt: skip
    return tuple(out)


def _in_other(graph: Graph, name: str, cluster: Cluster) -> bool:
    node = graph.get(name)
    other = node.meta.get(CLUSTER) if node is not None else None
    return bool(other) and other != cluster.name


def _on_device(node: Node, partitioned: bool) -> bool:
    if partitioned:
        return CLUSTER in node.meta
    placement = node.meta.get(PLACEMENT)
    return isinstance(placement, Placement) and placement.device


def _host_op(node: Node, full_offload: bool) -> HostOp:
    placement = node.meta.get(PLACEMENT)
    if not isinstance(placement, Placement):
        message = f"{node.op}: no placement decision (the placement pass did not run)"
        return HostOp(node.name, node.op, UNDECIDED, 0, message)
    if placement.device:
        why = (
            "full-offload mode keeps only the largest GeOp and runs the rest on the host"
            if full_offload
            else "no GeOp holds it"
        )
        message = f"{node.op}: the device can run it, but {why}"
        return HostOp(node.name, node.op, OUTSIDE_GEOP, 0, message)
    message = placement.message or f"{node.op}: {placement.reason}"
    return HostOp(node.name, node.op, placement.reason, placement.code, message)
