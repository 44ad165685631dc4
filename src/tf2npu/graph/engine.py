"""One engine run: options in, the decided graph and its diagnostics out.

:func:`run_engine` builds the :class:`~tf2npu.graph.context.EngineConfig` every pass reads
(``ctx.config`` of the pass manager): the resolved :class:`~tf2npu.config.options.NpuOptions`,
the op library, the per-op-type precision classes after ``modify_mixlist``, the fusion switch,
and the run's diagnostics. It then runs :data:`DEFAULT_PIPELINE` over the graph.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tf2npu.config.options import NpuOptions
from tf2npu.config.overrides import EngineOverrides
from tf2npu.gcpause import gc_paused
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.instruments import TimePasses
from tf2npu.graph.ir import Graph
from tf2npu.graph.lint import Signature
from tf2npu.graph.npu_ops import recognize
from tf2npu.graph.opinfo import OpLibrary
from tf2npu.graph.passes.infra import PassContext, PassInstrument, PassManager, PipelineResult
from tf2npu.graph.passes.pipeline import DEFAULT_PIPELINE

__all__ = ["PASS_MODULES", "EngineRun", "load_passes", "run_engine"]

#: Modules that register the passes of :data:`DEFAULT_PIPELINE` (imported by :func:`load_passes`).
PASS_MODULES = tuple(f"tf2npu.graph.passes.{name}" for name in DEFAULT_PIPELINE)


@dataclass
class EngineRun:
    """The outcome of :func:`run_engine`."""

    graph: Graph
    config: EngineConfig
    pipeline: PipelineResult[Graph]
    pass_seconds: dict[str, float]
    #: Emitted NPU-op calls turned back into NPU-op nodes before the passes (``recognize``).
    npu_ops_recognized: int = 0


def load_passes() -> None:
    """Import every pass module so the registry holds the default pipeline."""
    for module in PASS_MODULES:
        importlib.import_module(module)


def run_engine(
    graph: Graph,
    options: NpuOptions,
    *,
    ops: OpLibrary | None = None,
    instruments: Sequence[PassInstrument[Any]] = (),
    disabled: frozenset[str] = frozenset(),
    verify: bool = False,
    overrides: EngineOverrides | None = None,
    half_round: bool = False,
) -> EngineRun:
    """Run the default pipeline over ``graph`` (mutated in place) under ``options``.

    ``overrides`` are a trial's changes on top of the options (:mod:`tf2npu.config.overrides`).
    ``half_round``: the caller registered the native rounding op in the TensorFlow that will
    run the graph (:attr:`EngineConfig.half_round`).
    """
    load_passes()
    # Scripts emit NPU ops (npu_ops.dropout, npu_unary_ops.gelu) as calls of CPU functions that
    # stock TF runs; restore them to NPU-op nodes so every pass sees "Gelu", not a call.
    recognized = recognize(graph)
    config = EngineConfig.build(options, ops, overrides, half_round=half_round)
    timer = TimePasses()
    ctx = PassContext(
        config=config,
        disabled=disabled,
        instruments=(timer, *instruments),
        verify=verify,
    )
    baseline = Signature.of(graph) if verify else None
    with gc_paused():  # every pass allocates per node and frees no cycles (tf2npu.gcpause)
        result = PassManager.from_names(DEFAULT_PIPELINE).run(graph, ctx, baseline)
    return EngineRun(result.graph, config, result, dict(timer.seconds), recognized)
