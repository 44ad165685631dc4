"""Horovod API names and what tf2npu tells the user about them (data for the horovod rules).

Names are canonical (:mod:`tf2npu.migrate.names`): ``hvd.X`` for ``horovod.tensorflow.X``,
``hvd.keras.X`` for Keras Horovod. The texts are tf2npu's own.
"""

from __future__ import annotations

RANK_INDEX = "int(os.getenv('RANK_ID', '0'))"
"""This process's rank, as ``npu_hooks_append`` passes it to the broadcast hook."""

INIT = ("hvd.init", "hvd.keras.init", "hvd.shutdown", "hvd.keras.shutdown")
OPTIMIZER = ("hvd.DistributedOptimizer", "hvd.keras.DistributedOptimizer")
HOOK = "hvd.BroadcastGlobalVariablesHook"
CALLBACK = "hvd.keras.callbacks.BroadcastGlobalVariablesCallback"
BROADCAST = "hvd.broadcast_global_variables"
ALLREDUCE = "hvd.allreduce"
KERAS_ALLREDUCE = "hvd.keras.allreduce"
BROADCAST_VALUE = ("hvd.broadcast", "hvd.keras.broadcast")
AVERAGE = ("hvd.Average", "hvd.keras.Average")
SUM = ("hvd.Sum", "hvd.keras.Sum")
ADASUM = ("hvd.Adasum", "hvd.keras.Adasum")
COMPRESSION = ("hvd.Compression.", "hvd.keras.Compression.", "hvd.compression.Compression.")

# Build and transport queries: an NPU job has none of NCCL, MPI, Gloo, DDL, oneCCL, CUDA, ROCm
# (HCCL does the collectives), so each is the constant False.
BUILD_QUERIES = frozenset(
    f"{root}.{query}"
    for root in ("hvd", "hvd.keras")
    for query in (
        "nccl_built", "mpi_built", "gloo_built", "ddl_built", "ccl_built", "cuda_built",
        "rocm_built", "mpi_enabled", "gloo_enabled", "mpi_threads_supported",
    )
)  # fmt: skip

# Horovod options that only tune Horovod's own communication: dropped without changing results.
TUNING = frozenset({
    "compression", "sparse_as_dense", "device_dense", "device_sparse", "use_locking",
    "gradient_predivide_factor", "average_aggregated_gradients", "num_groups", "groups",
    "scale_local_gradients",
})  # fmt: skip

# Why a dropped argument makes no difference (or what changes), for the report.
DROP_WHY = {
    "compression": "compression= removed: HCCL sends gradients uncompressed (fp16 compression "
    "only saved bandwidth; results stay the same up to fp16 rounding)",
    "sparse_as_dense": "sparse_as_dense= removed: NPUDistributedOptimizer all-gathers sparse "
    "gradients, which gives the same averaged values",
    "name": "name= removed: npu_distributed_optimizer_wrapper patches the optimizer in place, "
    "which keeps its own name",
    "device_dense": "device_dense= removed: the NPU places its collectives itself",
    "device_sparse": "device_sparse= removed: the NPU places its collectives itself",
}

_BY_KEYWORD = (
    "pass Horovod's arguments by keyword (its argument order changed between releases), without "
    "**kwargs, and tf2npu rewrites it to {helper}, a Keras callback it writes into the file"
)
# What to do instead, for Horovod APIs that have no rewrite (looked up by longest prefix).
ADVICE: dict[str, str] = {
    "hvd": "`hvd` used as a value (e.g. a Horovod availability check): Horovod is gone after "
    "the migration, so replace the test by hand (e.g. get_rank_size() > 1)",
    "hvd.allgather": "use hccl_ops.allgather(tensor, rank_size=get_rank_size()) (hccl_ops comes "
    "with npu_init)",
    "hvd.broadcast": "use hccl_ops.broadcast([tensor], root_rank)[0] (hccl_ops comes with "
    "npu_init)",
    "hvd.broadcast_variables": "broadcast each variable with hccl_ops.broadcast, or add "
    f"NPUBroadcastGlobalVariablesHook(root_rank, index={RANK_INDEX}) to the session hooks",
    "hvd.Compression": "remove it: NPU all-reduce has no gradient compression",
    "hvd.DistributedGradientTape": "eager-only API: compute gradients with an optimizer wrapped in "
    "NPUDistributedOptimizer, or average them with npu_allreduce",
    "hvd.keras.callbacks.MetricAverageCallback": _BY_KEYWORD.format(
        helper="NpuMetricAverageCallback"
    ),
    "hvd.keras.callbacks.LearningRateWarmupCallback": _BY_KEYWORD.format(
        helper="NpuLearningRateWarmupCallback"
    ),
    "hvd.keras.callbacks.LearningRateScheduleCallback": _BY_KEYWORD.format(
        helper="NpuLearningRateScheduleCallback"
    ),
    "hvd.keras.load_model": "write `model = hvd.load_model(path)` as its own statement (tf2npu "
    "then rewrites it), or load with Keras' load_model and patch the model's optimizer with "
    "npu_distributed_optimizer_wrapper",
    "hvd.keras.broadcast_global_variables": "add NPUBroadcastGlobalVariablesCallback(root_rank) to "
    "the model.fit callbacks instead",
}
DEFAULT_ADVICE = (
    "replace it by hand (collectives: hccl_ops from npu_init; ranks: get_rank_id() / "
    "get_rank_size()) or remove it"
)
