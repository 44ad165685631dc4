"""What every graph pass reads besides the graph: :class:`EngineConfig`.

The pass manager hands it to each pass as ``ctx.config`` (a ``PassContext[EngineConfig]``). It
lives below :mod:`tf2npu.graph.engine` so that passes and their helpers can name the type
without importing the orchestrator that runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tf2npu.config.fusion_switch import FusionSwitch
from tf2npu.config.mixlist import Mixlist
from tf2npu.config.options import NpuOptions
from tf2npu.config.overrides import EngineOverrides
from tf2npu.config.precision import PrecisionClass
from tf2npu.graph.decisions import Diagnostics
from tf2npu.graph.ir import Node
from tf2npu.graph.opinfo import OpLibrary, load_default, mixlist

__all__ = ["EngineConfig"]


@dataclass
class EngineConfig:
    """Everything the passes read besides the graph."""

    options: NpuOptions
    ops: OpLibrary
    classes: Mapping[str, PrecisionClass]
    fusion: FusionSwitch
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    overrides: EngineOverrides = field(default_factory=EngineOverrides)
    """A trial's fusion instances off and nodes kept in float32 (:mod:`tf2npu.config.overrides`);
    the fusion part is already folded into :attr:`fusion`."""
    half_round: bool = False
    """The runtime registered ``Tf2npuHalfRound`` in TensorFlow (:mod:`tf2npu.runtime.native`):
    lowering may emit it for a float16 rounding read as float32 instead of a ``Cast`` pair. The
    engine never loads the library; only the process that will run the graph knows."""

    @classmethod
    def build(
        cls,
        options: NpuOptions,
        ops: OpLibrary | None = None,
        overrides: EngineOverrides | None = None,
        *,
        half_round: bool = False,
    ) -> EngineConfig:
        """Load the op library, apply ``modify_mixlist``, read ``fusion_switch_file`` and put
        ``overrides`` on top."""
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
        overrides = overrides if overrides is not None else EngineOverrides()
        if overrides.fusion:
            switch = switch.with_override(overrides.fusion)
        return cls(options, library, classes, switch, diagnostics, overrides, half_round)

    def keeps_fp32(self, node: Node) -> bool:
        """Whether a trial keeps ``node`` (a client node, or a node a pass made from one)
        in float32 (``TF2NPU_KEEP_FP32``)."""
        keep = self.overrides.keep_fp32.nodes
        if not keep:
            return False
        return node.name in keep or any(name in keep for name in node.origin)

    def precision_class(self, op_type: str) -> PrecisionClass:
        """The class of ``op_type`` after ``modify_mixlist`` (unknown op types are deny)."""
        return self.classes.get(op_type, self.ops.get(op_type).precision)
