"""``from npu_bridge.npu_init import *``: the façade migrated scripts import.

It re-exports the adapter's classes and modules (the anchor list), the latest adapter's helper
functions, and — like the real module, which has no ``__all__`` — the modules it imports
(``os``, ``tf``, ``config_pb2``, ``rewriter_config_pb2``, ``RewriterConfig``, ``session``,
``session_run_hook``, ``backend``), which converted scripts use without importing them.

Importing it also has the latest adapter's side effect: every session created afterwards gets an
``NpuOptimizer`` config (normalised like :func:`npu_config_proto`) and so runs as an NPU session
(:func:`tf2npu.runtime.make_sessions_npu_by_default`).

Not provided: ``profiler`` and ``scoped_graph_manager`` (no CPU counterpart in tf2npu yet).
"""

# ruff: noqa: F401  (every import is a re-export)
import os
from typing import Any as _Any  # private: a star import must not leak typing names

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig
from tensorflow.python.client import session
from tensorflow.python.training import session_run_hook

import tf2npu.runtime as _runtime
from npu_bridge.estimator import npu_ops
from npu_bridge.estimator.npu import (
    keras_to_npu,
    npu_plugin,
    npu_rnn,
    npu_scope,
    npu_strategy,
    util,
)
from npu_bridge.estimator.npu.npu_callbacks import NPUBroadcastGlobalVariablesCallback
from npu_bridge.estimator.npu.npu_config import (
    DumpConfig,
    DynamicInputConfig,
    MemoryConfig,
    NPURunConfig,
    ProfilingConfig,
    decorator_tf_session,
)
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator, NPUEstimatorSpec
from npu_bridge.estimator.npu.npu_hook import (
    NPUBroadcastGlobalVariablesHook,
    NPUCheckpointSaverHook,
    NPUOutputTensorHook,
    SetIterationsVarHook,
    TellMeStepOrLossHook,
)
from npu_bridge.estimator.npu.npu_loss_scale_manager import (
    ExponentialUpdateLossScaleManager,
    FixedLossScaleManager,
)
from npu_bridge.estimator.npu.npu_loss_scale_optimizer import NPULossScaleOptimizer
from npu_bridge.estimator.npu.npu_optimizer import (
    KerasDistributeOptimizer,
    NPUDistributedOptimizer,
    NPUOptimizer,
    npu_allreduce,
    npu_distributed_optimizer_wrapper,
)
from npu_bridge.estimator.npu_unary_ops import npu_unary_ops
from npu_bridge.hccl import hccl_ops
from npu_bridge.hccl.manage import (
    create_group,
    destroy_group,
    get_group_rank_from_world_rank,
    get_local_rank_id,
    get_local_rank_size,
    get_rank_id,
    get_rank_size,
    get_world_rank_from_group_rank,
    set_split_strategy_by_idx,
    set_split_strategy_by_size,
)
from npu_bridge.npu_cpu import npu_cpu_ops
from tf2npu.config.sources import NPU_OPTIMIZER as _NPU_OPTIMIZER
from tf2npu.runtime.protos import npu_session_config as _npu_session_config

backend = tf.compat.v1.keras.backend

_OFF = RewriterConfig.OFF
_ON = RewriterConfig.ON

#: What the migration tool puts into ``tf.config.optimizer.set_experimental_options(...)``.
experimental_options = {
    "disable_model_pruning": False,
    "function_optimization": _ON,
    "constant_folding": _ON,
    "shape_optimization": _ON,
    "arithmetic_optimization": _ON,
    "loop_optimization": _ON,
    "dependency_optimization": _ON,
    "layout_optimizer": _ON,
}


def npu_config_proto(config_proto: _Any = None) -> _Any:
    """Make ``config_proto`` (a fresh ``ConfigProto`` if it is not one) an NPU session config.

    Adds a custom optimizer ``NpuOptimizer`` only if there is none (and then turns
    ``memory_optimization`` off); always sets ``allow_soft_placement=True``,
    ``log_device_placement=False``, ``remapping`` off and the XLA JIT level off. Returns the
    (mutated) proto.
    """
    return _npu_session_config(config_proto)


def npu_graph_options(graph_options: _Any = None) -> _Any:
    """``graph_options`` (a fresh ``GraphOptions`` if it is not one) with XLA JIT off."""
    if not isinstance(graph_options, config_pb2.GraphOptions):
        graph_options = config_pb2.GraphOptions()
    graph_options.optimizer_options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return graph_options


def npu_optimizer_options(optimizer_options: _Any = None) -> _Any:
    """``optimizer_options`` (a fresh ``OptimizerOptions`` if it is not one) with XLA JIT off."""
    if not isinstance(optimizer_options, config_pb2.OptimizerOptions):
        optimizer_options = config_pb2.OptimizerOptions()
    optimizer_options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return optimizer_options


def npu_run_config_init(run_config: _Any = None) -> _Any:
    """Make a plain ``tf.estimator.RunConfig`` (a default one if not given) run on the NPU.

    Its private ``_session_config`` is overwritten through ``__dict__`` (``RunConfig`` forbids
    setting attributes) with :func:`npu_config_proto` of its session config, so a plain
    ``tf.estimator.Estimator`` then creates NPU sessions.
    """
    if not isinstance(run_config, tf.compat.v1.estimator.RunConfig):
        run_config = tf.compat.v1.estimator.RunConfig()
    run_config.__dict__["_session_config"] = npu_config_proto(run_config.session_config)
    return run_config


def npu_session_config_init(session_config: _Any = None) -> _Any:
    """The anchor migration tool's helper: **always** appends an ``NpuOptimizer`` entry.

    A fresh ``ConfigProto`` if ``session_config`` is not one; ``remapping`` off. Calling it
    twice on one proto therefore leaves two entries (as the anchor tool's output did).
    """
    if not isinstance(session_config, config_pb2.ConfigProto):
        session_config = config_pb2.ConfigProto()
    rewrite = session_config.graph_options.rewrite_options
    rewrite.custom_optimizers.add().name = _NPU_OPTIMIZER
    rewrite.remapping = _OFF
    return session_config


def set_keras_session_npu_config(config: _Any = None) -> _Any:
    """Install a new NPU session as the Keras backend session; return it."""
    sess = tf.compat.v1.Session(config=npu_config_proto(config))
    backend.set_session(sess)
    return sess


def npu_clear_session(config: _Any = None) -> _Any:
    """``keras.backend.clear_session()``, then a fresh NPU Keras session (returned)."""
    backend.clear_session()
    return set_keras_session_npu_config(config)


_RANK_KEYS = ("npu_rank_id", "npu_local_rank_id", "npu_rank_size", "npu_local_rank_size")


def init_resource(config: _Any = None) -> tuple[_Any, _Any]:
    """Initialise the device and collectives in a new session; return ``(sess, shutdown_op)``.

    Runs ``npu_ops.initialize_system()`` in a session built with :func:`npu_config_proto` of
    ``config``, then caches this process's rank id, local rank id, rank size and local rank
    size (read by :func:`get_npu_rank_id` and friends). Pass the returned pair to
    :func:`shutdown_resource` at the end.
    """
    util.global_dict_init()
    init_op = npu_ops.initialize_system()
    shutdown_op = npu_ops.shutdown_system()
    sess = tf.compat.v1.Session(config=npu_config_proto(config))
    sess.run(init_op)
    values = (get_rank_id(), get_local_rank_id(), get_rank_size(), get_local_rank_size())
    for key, value in zip(_RANK_KEYS, values, strict=True):
        util.set_value(key, value)
    return sess, shutdown_op


def shutdown_resource(sess: _Any, npu_shutdown: _Any) -> None:
    """Run the shutdown op returned by :func:`init_resource`."""
    sess.run(npu_shutdown)


def close_session(sess: _Any) -> None:
    """``sess.close()``."""
    sess.close()


def get_npu_rank_id() -> int:
    """Rank id cached by :func:`init_resource` (0 if it was not called)."""
    return int(util.get_value("npu_rank_id", 0))


def get_npu_local_rank_id() -> int:
    """Local rank id cached by :func:`init_resource` (0 if it was not called)."""
    return int(util.get_value("npu_local_rank_id", 0))


def get_npu_rank_size() -> int:
    """Rank size cached by :func:`init_resource` (1 if it was not called)."""
    return int(util.get_value("npu_rank_size", 1))


def get_npu_local_rank_size() -> int:
    """Local rank size cached by :func:`init_resource` (1 if it was not called)."""
    return int(util.get_value("npu_local_rank_size", 1))


def npu_hooks_append(hooks_list: _Any = ()) -> list[_Any]:
    """``hooks_list`` (``[]`` if not a list) plus one ``NPUBroadcastGlobalVariablesHook``."""
    hooks: list[_Any] = hooks_list if isinstance(hooks_list, list) else []
    hooks.append(NPUBroadcastGlobalVariablesHook(0, int(os.getenv("RANK_ID", "0"))))
    return hooks


def npu_callbacks_append(callbacks_list: _Any = ()) -> list[_Any]:
    """``callbacks_list`` (``[]`` if not a list) plus one broadcast callback."""
    callbacks: list[_Any] = callbacks_list if isinstance(callbacks_list, list) else []
    callbacks.append(NPUBroadcastGlobalVariablesCallback(0))
    return callbacks


class NpuEmptyHook(session_run_hook.SessionRunHook):  # type: ignore[misc]
    """A hook that does nothing (the migration tool's placeholder)."""


def npu_tf_optimizer(opt: _Any) -> _Any:
    """``NPUDistributedOptimizer(opt)``."""
    return NPUDistributedOptimizer(opt)


def npu_keras_optimizer(opt: _Any) -> _Any:
    """``KerasDistributeOptimizer(opt)``."""
    return KerasDistributeOptimizer(opt)


_runtime.make_sessions_npu_by_default()
