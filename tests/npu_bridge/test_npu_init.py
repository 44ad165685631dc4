"""npu_init: the star-import surface, the helper functions and the import side effect."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

tf = pytest.importorskip("tensorflow")

import tf2npu.runtime  # noqa: E402
from npu_bridge.estimator.npu import util  # noqa: E402

pytestmark = pytest.mark.tf

OFF = 2  # RewriterConfig.OFF / OptimizerOptions.OFF (-1 for the JIT level, checked by name)


@pytest.fixture
def npu_init(monkeypatch):
    """A fresh ``npu_bridge.npu_init`` whose session side effect is recorded, not applied."""
    calls: list[tuple] = []
    monkeypatch.setattr(
        tf2npu.runtime, "make_sessions_npu_by_default", lambda *a, **k: calls.append((a, k))
    )
    monkeypatch.delitem(sys.modules, "npu_bridge.npu_init", raising=False)
    monkeypatch.setattr(util, "_global_dict", {})
    monkeypatch.delenv("RANK_ID", raising=False)
    monkeypatch.delenv("RANK_SIZE", raising=False)
    module = importlib.import_module("npu_bridge.npu_init")
    module.recorded_side_effect = calls
    yield module
    sys.modules.pop("npu_bridge.npu_init", None)  # monkeypatch then restores an older one


ANCHOR_NAMES = [
    "NPURunConfig",
    "ProfilingConfig",
    "DumpConfig",
    "DynamicInputConfig",
    "NPUEstimator",
    "NPUEstimatorSpec",
    "NPUDistributedOptimizer",
    "NPUOptimizer",
    "NPUCheckpointSaverHook",
    "NPUOutputTensorHook",
    "NPULossScaleOptimizer",
    "FixedLossScaleManager",
    "ExponentialUpdateLossScaleManager",
    "npu_ops",
    "npu_rnn",
    "npu_scope",
    "util",
    "keras_to_npu",
    "npu_strategy",
    "npu_unary_ops",
    "hccl_ops",
    "rewriter_config_pb2",
    "RewriterConfig",
    "create_group",
    "destroy_group",
    "get_rank_size",
    "get_local_rank_size",
    "get_rank_id",
    "get_local_rank_id",
    "get_world_rank_from_group_rank",
    "get_group_rank_from_world_rank",
    "set_split_strategy_by_idx",
    "set_split_strategy_by_size",
]
LATEST_NAMES = [
    "npu_config_proto",
    "npu_graph_options",
    "npu_optimizer_options",
    "npu_run_config_init",
    "npu_session_config_init",
    "set_keras_session_npu_config",
    "npu_clear_session",
    "init_resource",
    "shutdown_resource",
    "close_session",
    "get_npu_rank_id",
    "get_npu_local_rank_id",
    "get_npu_rank_size",
    "get_npu_local_rank_size",
    "npu_hooks_append",
    "npu_callbacks_append",
    "NpuEmptyHook",
    "npu_tf_optimizer",
    "npu_keras_optimizer",
    "experimental_options",
    "MemoryConfig",
    "decorator_tf_session",
    "NPUBroadcastGlobalVariablesHook",
    "SetIterationsVarHook",
    "TellMeStepOrLossHook",
    "KerasDistributeOptimizer",
    "npu_distributed_optimizer_wrapper",
    "npu_allreduce",
    "NPUBroadcastGlobalVariablesCallback",
    "npu_plugin",
    "npu_cpu_ops",
    "config_pb2",
    "session",
    "session_run_hook",
    "backend",
    "tf",
    "os",
]


def test_star_import_provides_every_name(npu_init) -> None:
    namespace: dict[str, object] = {}
    exec("from npu_bridge.npu_init import *", namespace)
    missing = [n for n in ANCHOR_NAMES + LATEST_NAMES if n not in namespace]
    assert missing == []
    assert namespace["os"] is os
    assert namespace["tf"] is tf
    assert not hasattr(npu_init, "__all__")
    assert "_runtime" not in namespace


def test_import_makes_sessions_npu_by_default(npu_init) -> None:
    assert npu_init.recorded_side_effect == [((), {})]


def _npu_entries(config):
    return [
        o
        for o in config.graph_options.rewrite_options.custom_optimizers
        if o.name == "NpuOptimizer"
    ]


def test_npu_config_proto_adds_one_npu_optimizer_and_rewrite_options(npu_init) -> None:
    config = npu_init.npu_config_proto()
    assert len(_npu_entries(config)) == 1
    rewrite = config.graph_options.rewrite_options
    assert rewrite.remapping == OFF
    assert rewrite.memory_optimization == OFF
    assert config.allow_soft_placement is True
    assert config.log_device_placement is False
    assert config.graph_options.optimizer_options.global_jit_level == (
        tf.compat.v1.OptimizerOptions.OFF
    )
    assert npu_init.npu_config_proto(config) is config
    assert len(_npu_entries(config)) == 1


def test_npu_config_proto_keeps_an_existing_entry(npu_init) -> None:
    config = tf.compat.v1.ConfigProto(log_device_placement=True)
    entry = config.graph_options.rewrite_options.custom_optimizers.add()
    entry.name = "NpuOptimizer"
    entry.parameter_map["iterations_per_loop"].i = 10
    npu_init.npu_config_proto(config)
    (kept,) = _npu_entries(config)
    assert kept.parameter_map["iterations_per_loop"].i == 10
    # memory_optimization is only switched off together with a new entry
    assert config.graph_options.rewrite_options.memory_optimization == 0
    assert config.log_device_placement is False


def test_npu_config_proto_replaces_a_non_proto(npu_init) -> None:
    config = npu_init.npu_config_proto("not a proto")
    assert isinstance(config, tf.compat.v1.ConfigProto)
    assert len(_npu_entries(config)) == 1


def test_graph_and_optimizer_options(npu_init) -> None:
    jit_off = tf.compat.v1.OptimizerOptions.OFF
    graph_options = tf.compat.v1.GraphOptions()
    graph_options.optimizer_options.global_jit_level = tf.compat.v1.OptimizerOptions.ON_1
    assert npu_init.npu_graph_options(graph_options) is graph_options
    assert graph_options.optimizer_options.global_jit_level == jit_off
    assert npu_init.npu_graph_options(None).optimizer_options.global_jit_level == jit_off
    assert npu_init.npu_optimizer_options(3).global_jit_level == jit_off


def test_npu_run_config_init_on_a_plain_run_config(npu_init) -> None:
    run_config = tf.compat.v1.estimator.RunConfig(model_dir="/tmp/m", save_summary_steps=7)
    assert npu_init.npu_run_config_init(run_config) is run_config
    assert len(_npu_entries(run_config.session_config)) == 1
    assert run_config.save_summary_steps == 7
    fresh = npu_init.npu_run_config_init()
    assert isinstance(fresh, tf.compat.v1.estimator.RunConfig)
    assert len(_npu_entries(fresh.session_config)) == 1


def test_npu_session_config_init_always_appends(npu_init) -> None:
    config = npu_init.npu_session_config_init()
    npu_init.npu_session_config_init(config)
    assert len(_npu_entries(config)) == 2
    assert config.graph_options.rewrite_options.remapping == OFF


def test_rank_getters_default_to_one_rank(npu_init) -> None:
    assert (
        npu_init.get_npu_rank_id(),
        npu_init.get_npu_local_rank_id(),
        npu_init.get_npu_rank_size(),
        npu_init.get_npu_local_rank_size(),
    ) == (0, 0, 1, 1)


def test_init_and_shutdown_resource(npu_init, monkeypatch) -> None:
    monkeypatch.setenv("RANK_ID", "0")
    with tf.Graph().as_default():
        sess, shutdown = npu_init.init_resource()
        try:
            assert len(_npu_entries(sess._config)) == 1
            npu_init.shutdown_resource(sess, shutdown)
        finally:
            npu_init.close_session(sess)
        assert sess._closed
    assert util.get_value("npu_rank_size") == 1
    assert npu_init.get_npu_rank_size() == 1
    assert npu_init.get_npu_rank_id() == 0


def test_npu_hooks_append(npu_init, monkeypatch) -> None:
    monkeypatch.setenv("RANK_ID", "0")
    hooks = npu_init.npu_hooks_append()
    assert len(hooks) == 1
    assert isinstance(hooks[0], npu_init.NPUBroadcastGlobalVariablesHook)
    assert (hooks[0].root_rank, hooks[0].index) == (0, 0)
    existing = [npu_init.NpuEmptyHook()]
    assert npu_init.npu_hooks_append(existing) is existing
    assert len(existing) == 2
    assert isinstance(existing[0], tf.compat.v1.train.SessionRunHook)


def test_npu_callbacks_append(npu_init) -> None:
    callbacks = npu_init.npu_callbacks_append("not a list")
    assert len(callbacks) == 1
    assert isinstance(callbacks[0], npu_init.NPUBroadcastGlobalVariablesCallback)


def test_optimizer_helpers(npu_init) -> None:
    with tf.Graph().as_default():
        opt = npu_init.npu_tf_optimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
        assert isinstance(opt, npu_init.NPUDistributedOptimizer)
    keras_opt = npu_init.npu_keras_optimizer(tf.keras.optimizers.legacy.SGD())
    assert isinstance(keras_opt, npu_init.KerasDistributeOptimizer)


def test_keras_session_helpers(npu_init) -> None:
    backend = npu_init.backend
    try:
        sess = npu_init.npu_clear_session()  # clears Keras state, then installs a new session
        assert backend.get_session() is sess
        assert len(_npu_entries(sess._config)) == 1
        again = npu_init.set_keras_session_npu_config()
        assert again is not sess
        assert backend.get_session() is again
    finally:
        backend.clear_session()


def test_experimental_options(npu_init) -> None:
    on = npu_init.RewriterConfig.ON
    assert npu_init.experimental_options == {
        "disable_model_pruning": False,
        "function_optimization": on,
        "constant_folding": on,
        "shape_optimization": on,
        "arithmetic_optimization": on,
        "loop_optimization": on,
        "dependency_optimization": on,
        "layout_optimizer": on,
    }
