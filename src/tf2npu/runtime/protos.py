"""Session-config normalisation shared by ``npu_bridge`` and the runtime (needs TensorFlow)."""

from __future__ import annotations

from typing import Any

from tf2npu.config.sources import NPU_OPTIMIZER

__all__ = ["npu_session_config", "without_npu_optimizer"]


def npu_session_config(config: Any = None) -> Any:
    """``config`` normalised like the adapter's ``npu_config_proto`` (mutated and returned).

    A fresh ``ConfigProto`` when ``config`` is not one; an ``NpuOptimizer`` custom optimizer
    added only when none exists (then ``memory_optimization`` off too); always
    ``allow_soft_placement=True``, ``log_device_placement=False``, ``remapping`` off and XLA
    JIT off.
    """
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2

    if not isinstance(config, config_pb2.ConfigProto):
        config = config_pb2.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    off = rewriter_config_pb2.RewriterConfig.OFF
    if not any(optimizer.name == NPU_OPTIMIZER for optimizer in rewrite.custom_optimizers):
        rewrite.custom_optimizers.add().name = NPU_OPTIMIZER
        rewrite.memory_optimization = off
    config.allow_soft_placement = True
    config.log_device_placement = False
    rewrite.remapping = off
    config.graph_options.optimizer_options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return config


def without_npu_optimizer(config: Any) -> Any:
    """A copy of ``config`` without the ``NpuOptimizer`` entry (the inner session's config)."""
    from tensorflow.core.protobuf import config_pb2

    copy = config_pb2.ConfigProto()
    if config is not None:
        copy.CopyFrom(config)
    optimizers = copy.graph_options.rewrite_options.custom_optimizers
    kept = [opt for opt in optimizers if opt.name != NPU_OPTIMIZER]
    del optimizers[:]
    optimizers.extend(kept)
    return copy
