"""Graph passes and the infrastructure that runs them (see :mod:`.infra`, :mod:`.pipeline`)."""

from tf2npu.graph.passes.infra import (
    PASSES,
    GraphPass,
    LintableGraph,
    PassContext,
    PassError,
    PassInfo,
    PassInstrument,
    PassManager,
    PassRegistry,
    PassResult,
    PipelineError,
    PipelineResult,
    build_pipeline,
    register_pass,
)
from tf2npu.graph.passes.pipeline import DEFAULT_PIPELINE, STAGES

__all__ = [
    "DEFAULT_PIPELINE",
    "PASSES",
    "STAGES",
    "GraphPass",
    "LintableGraph",
    "PassContext",
    "PassError",
    "PassInfo",
    "PassInstrument",
    "PassManager",
    "PassRegistry",
    "PassResult",
    "PipelineError",
    "PipelineResult",
    "build_pipeline",
    "register_pass",
]
