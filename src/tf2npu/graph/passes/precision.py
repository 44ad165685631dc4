"""The ``precision`` pass: run float32 device nodes in float16 where ``precision_mode`` says so.

Rules and reasons are in :mod:`tf2npu.graph.precision` and ``docs/precision.md``. Every float32
device node judged gets a :class:`~tf2npu.graph.decisions.PrecisionDecision` under
:data:`~tf2npu.graph.decisions.PRECISION`; lowered nodes are superseded by a float16 clone
behind casts back, so original names and float32 outputs survive. Function bodies are processed
like the top level (their signatures stay float32).
"""

from __future__ import annotations

from tf2npu.gcpause import gc_paused
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import PRECISION, PrecisionDecision
from tf2npu.graph.ir import Graph
from tf2npu.graph.passes.infra import PassContext, PassInfo, PassResult, register_pass
from tf2npu.graph.precision import Mode, classify, mode_named, rewrite

__all__ = ["PrecisionPass"]


@register_pass
class PrecisionPass:
    info = PassInfo(
        "precision",
        requires=("placement",),
        description="float16/float32 per device node by precision_mode and the mixed lists",
    )

    def run(self, graph: Graph, ctx: PassContext[EngineConfig]) -> PassResult[Graph]:
        cfg = ctx.config
        mode = mode_named(cfg.options.effective_precision_mode)
        if mode.note:
            cfg.diagnostics.info(
                "precision_mode_approximated",
                f"precision_mode {mode.name}: {mode.note}",
                fix="use allow_mix_precision or force_fp16 to see float16 decisions",
            )
        stats = {"casts_inserted": 0, "nodes_fp16": 0, "nodes_fp32": 0}
        with gc_paused():
            for body in list(graph.walk()):
                self._run_body(body, cfg, mode, stats)
        return PassResult(graph, changed=stats["nodes_fp16"] > 0, stats=stats)

    @staticmethod
    def _run_body(body: Graph, cfg: EngineConfig, mode: Mode, stats: dict[str, int]) -> None:
        judged = classify(body, cfg, mode)
        for name, found in judged.items():
            after = mode.lower if found.verdict.lower else "float32"
            decision = PrecisionDecision("float32", after, found.verdict.reason)
            body[name].meta[PRECISION] = decision
            stats["nodes_fp16" if found.verdict.lower else "nodes_fp32"] += 1
        stats["casts_inserted"] += rewrite(body, judged, mode)
