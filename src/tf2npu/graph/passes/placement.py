"""The ``placement`` pass: device or host for every node of every graph, and why.

It follows the adapter's candidate selection (``OMPartitionSubgraphsPass``, reference
§3.3–§3.4) on the top-level graph — whole-graph rules, per-node predicates, frames,
propagation to a fixpoint, Consts pulled in — then places function bodies after their callers,
and checks what the device fails on once placed: lookup tables split across host and device,
variables the input pipeline reads on the host but the device initialises (seed 000 cases 01
and 02), and v1 control flow on the device in a dynamic-shape graph (case 03). Every node gets a
:class:`~tf2npu.graph.decisions.Placement` under ``node.meta["placement"]``; the rules and
reason slugs are documented in ``docs/placement.md``.
"""

from __future__ import annotations

from collections import Counter

from tf2npu.gcpause import gc_paused
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import PLACEMENT, Placement, live_nodes
from tf2npu.graph.ir import Graph
from tf2npu.graph.passes.infra import PassContext, PassInfo, PassResult, register_pass
from tf2npu.graph.placement import candidates, pipeline_variables, tables, v1_control
from tf2npu.graph.placement.frames import Frames, build_frames
from tf2npu.graph.placement.functions import place_functions
from tf2npu.graph.placement.predicates import WITHOUT_NPU_COMPILE, Support
from tf2npu.graph.placement.propagation import EdgeRules, out_edges, propagate, pull_consts
from tf2npu.graph.placement.regions import GET_NEXT, ITERATORS, regions
from tf2npu.graph.placement.tensors import EdgeTypes

__all__ = ["PlacementPass", "place"]


def place(
    graph: Graph, cfg: EngineConfig, support: Support
) -> tuple[dict[str, Placement], list[tables.TableSplit]]:
    """Top-level placements by node name, and the lookup tables split across the boundary.

    The device failures of the placed graph are reported into ``cfg.diagnostics``.
    """
    options = cfg.options
    types = EdgeTypes(graph)
    fixed = regions(graph)
    placements, pending = candidates.select(
        graph, support, types, data_pre_proc=options.enable_data_pre_proc, fixed=fixed
    )
    edges = out_edges(graph)
    sources = [n for n, p in placements.items() if not p.device and n not in fixed]
    rules = EdgeRules(
        strings_cross=options.iterations_per_loop == 1,
        data_pre_proc=options.enable_data_pre_proc,
        mixed=options.mix_compile_mode,
    )
    frames = build_frames(graph) if options.mix_compile_mode else Frames()
    pinned = frozenset(
        n.name
        for n in graph
        if options.enable_data_pre_proc
        and n.op in (ITERATORS | GET_NEXT)
        and placements[n.name].device
    )
    propagate(
        graph,
        placements,
        sources=sources,
        frames=frames,
        types=types,
        edges=edges,
        rules=rules,
        pinned=pinned,
    )
    pull_consts(placements, pending, edges)
    splits = tables.find_table_splits(graph, support, placements, types, edges)
    variables = pipeline_variables.find_pipeline_variables(graph, support, placements, types, edges)
    pipeline_variables.report(variables, cfg.diagnostics)
    v1_control.report(v1_control.find_v1_control(graph, options, placements), cfg.diagnostics)
    return placements, splits


@register_pass
class PlacementPass:
    """Write a :class:`Placement` for every node of every graph (top level and bodies)."""

    info = PassInfo(
        "placement",
        requires=("device_strings",),
        description="Decide device or host per node, with the reason for every host node.",
    )

    def run(self, graph: Graph, ctx: PassContext[EngineConfig]) -> PassResult[Graph]:
        cfg = ctx.config
        with gc_paused():  # see tf2npu.gcpause: 0.16 s of 0.24 s on 10k nodes otherwise
            return self._run(graph, cfg)

    def _run(self, graph: Graph, cfg: EngineConfig) -> PassResult[Graph]:
        support = Support(graph, cfg)
        top, splits = place(graph, cfg, support)
        bodies = place_functions(graph, top, support)
        for node in graph:
            node.meta[PLACEMENT] = top[node.name]
        for name, body in graph.functions.items():
            for node in body:
                node.meta[PLACEMENT] = bodies[name][node.name]
        tables.report(splits, cfg.diagnostics)
        _warn_ignored_scope(graph, cfg)
        return PassResult(graph, changed=False, stats=_stats(graph, len(splits)))


def _warn_ignored_scope(graph: Graph, cfg: EngineConfig) -> None:
    """``_without_npu_compile`` counts only in mixed compute (anchor); say so when it is unused."""
    if cfg.options.mix_compile_mode:
        return
    marked = [
        n.name
        for body in graph.walk()
        for n in body
        if (v := n.attrs.get(WITHOUT_NPU_COMPILE)) is not None
        and v.WhichOneof("value") == "b"
        and v.b
    ]
    if marked:
        more = f" and {len(marked) - 1} more" if len(marked) > 1 else ""
        cfg.diagnostics.warning(
            "without_npu_compile_ignored",
            f"{len(marked)} node(s) are under without_npu_compile_scope ({marked[0]!r}{more}) but "
            "the scope only counts in mixed compute, so they are placed on the device",
            node=marked[0],
            fix="set mix_compile_mode=True to keep them on the host, or drop the scope",
        )


def _stats(graph: Graph, splits: int) -> dict[str, int | float]:
    reasons: Counter[str] = Counter()
    device = host = 0
    for body in graph.walk():
        for node in live_nodes(body):
            placement: Placement = node.meta[PLACEMENT]
            if placement.device:
                device += 1
            else:
                host += 1
                reasons[placement.reason] += 1
    stats: dict[str, int | float] = {"device": device, "host": host, "table_split": splits}
    stats.update({f"host.{reason}": count for reason, count in sorted(reasons.items())})
    return stats
