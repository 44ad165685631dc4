"""``tf.estimator.RunConfig``'s arguments, and which of them ``NPURunConfig`` takes.

The one home of these names: the migration rules (``estimator``, ``tpu_estimator``), the
NPU-config reader (:mod:`tf2npu.config.sources`) and our ``NPURunConfig`` read them here. No
imports: the migration core reads it without paying for the option tables.
"""

from __future__ import annotations

__all__ = ["NOT_IN_NPU_RUN_CONFIG", "NPU_RUN_CONFIG_PASSES", "RUN_CONFIG_PARAMS"]

RUN_CONFIG_PARAMS = (
    "model_dir",
    "tf_random_seed",
    "save_summary_steps",
    "save_checkpoints_steps",
    "save_checkpoints_secs",
    "session_config",
    "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours",
    "log_step_count_steps",
    "train_distribute",
    "device_fn",
    "protocol",
    "eval_distribute",
    "experimental_distribute",
    "experimental_max_worker_delay_secs",
    "session_creation_timeout_secs",
)
"""``tf.estimator.RunConfig``'s parameters, in TF 1.15's order."""
NOT_IN_NPU_RUN_CONFIG = frozenset(
    {
        "device_fn",
        "protocol",
        "experimental_distribute",
        "experimental_max_worker_delay_secs",
        "session_creation_timeout_secs",
        "checkpoint_save_graph_def",  # TF 2.x's RunConfig
    }
)
"""``RunConfig`` arguments ``NPURunConfig`` does not take."""
NPU_RUN_CONFIG_PASSES = tuple(p for p in RUN_CONFIG_PARAMS if p not in NOT_IN_NPU_RUN_CONFIG)
"""The ``RunConfig`` arguments ``NPURunConfig`` takes and hands on to ``RunConfig``."""
