"""One engine run: options in, the decided graph and its diagnostics out.

:class:`EngineConfig` is what every pass reads (``ctx.options`` of the pass manager): the
resolved :class:`~tf2npu.config.options.NpuOptions`, the op library, the per-op-type precision
classes after ``modify_mixlist``, the fusion switch, and the run's :class:`Diagnostics`.
:func:`run_engine` builds it from options and runs :data:`DEFAULT_PIPELINE`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tf2npu.config.fusion_switch import FusionSwitch
from tf2npu.config.mixlist import Mixlist
from tf2npu.config.options import NpuOptions
from tf2npu.config.precision import PrecisionClass
from tf2npu.gcpause import gc_paused
from tf2npu.graph.decisions import Diagnostics
from tf2npu.graph.instruments import TimePasses
from tf2npu.graph.ir import Graph
from tf2npu.graph.lint import Signature
from tf2npu.graph.npu_ops import recognize
from tf2npu.graph.opinfo import OpLibrary, load_default, mixlist
from tf2npu.graph.passes.infra import PassContext, PassInstrument, PassManager, PipelineResult
from tf2npu.graph.passes.pipeline import DEFAULT_PIPELINE

__all__ = ["PASS_MODULES", "EngineConfig", "EngineRun", "load_passes", "run_engine"]

#: Modules that register the passes of :data:`DEFAULT_PIPELINE` (imported by :func:`load_passes`).
PASS_MODULES = tuple(f"tf2npu.graph.passes.{name}" for name in DEFAULT_PIPELINE)


@dataclass
class EngineConfig:
    """Everything the passes read besides the graph."""

    options: NpuOptions
    ops: OpLibrary
    classes: Mapping[str, PrecisionClass]
    fusion: FusionSwitch
    diagnostics: Diagnostics = field(default_factory=Diagnostics)

    @classmethod
    def build(cls, options: NpuOptions, ops: OpLibrary | None = None) -> EngineConfig:
        """Load the op library, apply ``modify_mixlist`` and read ``fusion_switch_file``."""
        from tf2npu.graph.fusion import known_rules

        library = ops if ops is not None else load_default()
        classes = {info.op: info.precision for info in library}
        diagnostics = Diagnostics()
        if options.modify_mixlist:
            edits = Mixlist.load(options.modify_mixlist)
            classes = mixlist.apply(edits, library, classes, diagnostics)
        rules = known_rules()
        if options.fusion_switch_file:
            switch = FusionSwitch.load(options.fusion_switch_file, rules)
        else:
            switch = FusionSwitch.all_on(rules)
        return cls(options, library, classes, switch, diagnostics)

    def precision_class(self, op_type: str) -> PrecisionClass:
        """The class of ``op_type`` after ``modify_mixlist`` (unknown op types are deny)."""
        return self.classes.get(op_type, self.ops.get(op_type).precision)


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
) -> EngineRun:
    """Run the default pipeline over ``graph`` (mutated in place) under ``options``."""
    load_passes()
    # Scripts emit NPU ops (npu_ops.dropout, npu_unary_ops.gelu) as calls of CPU functions that
    # stock TF runs; restore them to NPU-op nodes so every pass sees "Gelu", not a call.
    recognized = recognize(graph)
    config = EngineConfig.build(options, ops)
    timer = TimePasses()
    ctx = PassContext(
        options=config,
        disabled=disabled,
        instruments=(timer, *instruments),
        verify=verify,
    )
    baseline = Signature.of(graph) if verify else None
    with gc_paused():  # every pass allocates per node and frees no cycles (tf2npu.gcpause)
        result = PassManager.from_names(DEFAULT_PIPELINE).run(graph, ctx, baseline)
    return EngineRun(result.graph, config, result, dict(timer.seconds), recognized)
