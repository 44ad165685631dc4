"""NPURunConfig and the config objects: real signature, defaults, checks, options."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu import npu_config
from npu_bridge.estimator.npu.npu_config import (
    DumpConfig,
    DynamicInputConfig,
    ExperimentalConfig,
    GraphMemoryOptimizeConfig,
    MemoryConfig,
    NpuExecutePlacement,
    NPURunConfig,
    ProfilingConfig,
    set_npu_default_config,
)
from tf2npu.errors import ConfigError

pytestmark = pytest.mark.tf


@pytest.fixture(autouse=True)
def _no_tf_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF_CONFIG", raising=False)


def test_signature_starts_like_the_real_one_and_keeps_its_defaults() -> None:
    params = inspect.signature(NPURunConfig.__init__).parameters
    assert list(params)[:8] == [
        "self",
        "iterations_per_loop",
        "profiling_config",
        "model_dir",
        "tf_random_seed",
        "save_summary_steps",
        "save_checkpoints_steps",
        "save_checkpoints_secs",
    ]
    defaults = {name: p.default for name, p in params.items() if name != "self"}
    assert len(defaults) == 90
    assert {
        k: defaults[k]
        for k in (
            "iterations_per_loop",
            "save_summary_steps",
            "keep_checkpoint_max",
            "keep_checkpoint_every_n_hours",
            "log_step_count_steps",
            "enable_data_pre_proc",
            "hcom_parallel",
            "enable_exception_dump",
            "graph_run_mode",
            "buffer_optimize",
            "dynamic_graph_execute_mode",
            "device_type",
            "jit_compile",
            "input_fusion_size",
            "oo_level",
            "stream_sync_timeout",
            "mstune_mode",
        )
    } == {
        "iterations_per_loop": 1,
        "save_summary_steps": 0,
        "keep_checkpoint_max": 5,
        "keep_checkpoint_every_n_hours": 10000,
        "log_step_count_steps": 100,
        "enable_data_pre_proc": True,
        "hcom_parallel": True,
        "enable_exception_dump": 2,
        "graph_run_mode": 1,
        "buffer_optimize": "l2_optimize",
        "dynamic_graph_execute_mode": "dynamic_execute",
        "device_type": "default_device_type",
        "jit_compile": "auto",
        "input_fusion_size": 131072,
        "oo_level": "O3",
        "stream_sync_timeout": -1,
        "mstune_mode": None,
    }


def test_defaults_reach_run_config_and_options() -> None:
    config = NPURunConfig()
    assert isinstance(config, __import__("tensorflow").compat.v1.estimator.RunConfig)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (100, None)
    assert config.save_summary_steps == 0
    assert config.iterations_per_loop == 1
    assert config._hcom_parallel is True
    assert config.npu_arguments == {}
    options = config.npu_options()
    assert options.enable_data_pre_proc is True
    assert options.explicit == frozenset({"enable_data_pre_proc"})


def test_checkpoint_secs_keeps_steps_unset() -> None:
    config = NPURunConfig(save_checkpoints_secs=60)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (None, 60)


def test_arguments_become_options(tmp_path: Path) -> None:
    path = str(tmp_path)
    dump = DumpConfig(True, path, "0|5", dump_data="stats", dump_layer="a b")
    config = NPURunConfig(
        iterations_per_loop=10,
        precision_mode="allow_mix_precision",
        mix_compile_mode=False,
        graph_memory_max_size=1024,
        profiling_config=ProfilingConfig(True, '{"output":"/tmp"}'),
        dump_config=dump,
    )
    assert config._precision_mode == "allow_mix_precision"
    options = config.npu_options()
    assert options.iterations_per_loop == 10
    assert options.precision_mode == "allow_mix_precision"
    assert options.get("graph_memory_max_size") == "1024"
    assert options.get("profiling_mode") is True
    assert options.get("profiling_options") == '{"output":"/tmp"}'
    assert (options.enable_dump, options.dump_path, options.dump_step) == (True, path, "0|5")
    assert (options.dump_mode, options.dump_data, options.dump_layer) == ("output", "stats", "a b")


def test_replace_keeps_npu_arguments() -> None:
    config = NPURunConfig(iterations_per_loop=4).replace(model_dir="/tmp/model")
    assert config.model_dir == "/tmp/model"
    assert config.npu_options().iterations_per_loop == 4


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"iterations_per_loop": 0},
            ValueError,
            r"'iterations_per_loop' = 0 is out of range; give an integer >= 1",
        ),
        (
            {"iterations_per_loop": 2.0},
            TypeError,
            r"'iterations_per_loop' = 2.0 \(float\) is not an int",
        ),
        ({"iterations_per_loop": True}, TypeError, r"'iterations_per_loop' = True \(bool\)"),
        ({"mix_compile_mode": 1}, TypeError, r"'mix_compile_mode' = 1 \(int\) is not a bool"),
        (
            {"mix_compile_mode": True, "iterations_per_loop": 5},
            ValueError,
            r"'iterations_per_loop' = 5 cannot be used with mix_compile_mode=True; set iterations_per_loop=1 or mix_compile_mode=False",
        ),
        ({"jit_compile": True}, TypeError, r"'jit_compile' = True \(bool\) is not a str"),
        ({"horovod_mode": "yes"}, ValueError, r"'horovod_mode' = 'yes' is not a bool"),
        (
            {"graph_run_mode": 2},
            ValueError,
            r"'graph_run_mode' = 2 is out of range; give 0 \(inference\) or 1",
        ),
        (
            {"graph_run_mode": -1},
            ValueError,
            r"'graph_run_mode' = -1 is out of range; give an integer >= 0",
        ),
        ({"enable_exception_dump": -1}, ValueError, r"'enable_exception_dump' = -1"),
        (
            {"dump_config": {"enable_dump": True}},
            ValueError,
            r"^NPURunConfig\(dump_config=\{'enable_dump': True\}\): the adapter says \"`dump_config` must be "
            r"provided with type `DumpConfig`\"; dump_config must be a DumpConfig instance or None; "
            r"build it with DumpConfig\(...\)$",
        ),
        (
            {"dynamic_input_config": "x"},
            ValueError,
            r"dynamic_input_config must be a DynamicInputConfig",
        ),
        (
            {"experimental_config": 1},
            ValueError,
            r"experimental_config must be a ExperimentalConfig",
        ),
    ],
)
def test_real_checks_raise_real_exception_types(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        NPURunConfig(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"precision_mode": "fp17"},
            r"option 'precision_mode' = 'fp17' is not valid; use one of: 'force_fp32'",
        ),
        ({"precision_mode": "force_fp16", "precision_mode_v2": "fp16"}, r"cannot both be given"),
        ({"enable_exception_dump": 3}, r"'enable_exception_dump' = 3 is not valid"),
        ({"hcom_parallel": 1}, r"option 'hcom_parallel' = 1 \(int\) is not a bool"),
        ({"mstune_mode": "1"}, r"'mstune_mode' = '1' requires work_path"),
        (
            {"variable_placement": "Host"},
            r"'variable_placement' = 'Host' requires mix_compile_mode=True",
        ),
    ],
)
def test_option_table_checks_run_at_construction(kwargs, message) -> None:
    with pytest.raises(ConfigError, match=message):
        NPURunConfig(**kwargs)


def test_dump_without_path_is_rejected() -> None:
    with pytest.raises(ConfigError, match="'enable_dump' = True needs dump_path; the adapter says"):
        NPURunConfig(dump_config=DumpConfig(enable_dump=True))


def test_dump_path_must_be_an_existing_directory(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    with pytest.raises(ConfigError, match=re.escape(f"the path {missing} is not directory.")):
        NPURunConfig(dump_config=DumpConfig(enable_dump_debug=True, dump_path=str(missing)))


def test_both_dump_switches_are_rejected(tmp_path: Path) -> None:
    both = DumpConfig(enable_dump=True, enable_dump_debug=True, dump_path=str(tmp_path))
    with pytest.raises(ConfigError, match="'enable_dump_debug' = True are mutually exclusive"):
        NPURunConfig(dump_config=both)


def test_parameter_server_mode_needs_cluster_and_strategy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1"]}}))
    with pytest.raises(
        ValueError, match="TF_CONFIG has 'cluster'; parameter-server mode needs both"
    ):
        NPURunConfig(mix_compile_mode=True)
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        NPURunConfig()


def test_profiling_and_dump_objects_store_real_private_names() -> None:
    options = '{"output": "/tmp/prof", "training_trace": "on"}'
    profiling = ProfilingConfig(enable_profiling=True, profiling_options=options)
    assert profiling._enable_profiling is True
    assert profiling.profiling_options == options
    dump = DumpConfig(dump_data="stats", dump_layer="conv1 fc")
    assert (dump._dump_mode, dump._dump_debug_mode, dump.dump_data) == ("output", "all", "stats")
    assert dump.dump_layer == "conv1 fc"
    with pytest.raises(AttributeError, match="'DumpConfig' object has no attribute 'nope'"):
        _ = dump.nope


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: DumpConfig(dump_mode="both"),
            r"DumpConfig\(...\): 'dump_mode' = 'both' is not valid; the adapter says \"dump mode should be one of the list:\[input, output, all\]\"; use one of: 'input', 'output', 'all'",
        ),
        (
            lambda: DumpConfig(dump_data="npy"),
            r"DumpConfig\(...\): 'dump_data' = 'npy' is not valid; the adapter says \"dump_data should be 'tensor' or 'stats'.\"",
        ),
        (lambda: DumpConfig(dump_step="5-1"), r"'dump_step' = '5-1' is not valid"),
        (lambda: DumpConfig(enable_dump="yes"), r"'enable_dump' = 'yes' \(str\) is not a bool"),
        (
            lambda: ProfilingConfig(enable_profiling=1),
            r"'profiling_mode' = 1 \(int\) is not a bool",
        ),
        (
            lambda: DynamicInputConfig("data:-1,3", "1;2", 2),
            r"'dynamic_node_type' = 2 is not valid; use one of: 0, 1",
        ),
        (
            lambda: MemoryConfig(variable_use_1g_huge_page=3),
            r"'variable_use_1g_huge_page' = 3 is not valid",
        ),
        (
            lambda: ExperimentalConfig(logical_device_cluster_deploy_mode="ALL"),
            r"'experimental_logical_device_cluster_deploy_mode' = 'ALL'",
        ),
    ],
)
def test_config_objects_validate_their_values(build, message) -> None:
    with pytest.raises(ConfigError, match=message):
        build()


def test_dynamic_input_config_accepts_anchor_and_latest_calls() -> None:
    anchor = DynamicInputConfig("data:-1,3", "1;2", 1)
    assert anchor.compile_hybrid_mode is None
    latest = DynamicInputConfig("data:-1,3", "1;2", 1, 1)
    options = NPURunConfig(dynamic_input_config=latest).npu_options()
    assert (options.get("input_shape"), options.get("dynamic_dims")) == ("data:-1,3", "1;2")
    assert (options.get("dynamic_node_type"), options.get("compile_hybrid_mode")) == (1, 1)


def test_memory_and_experimental_configs_become_options() -> None:
    experimental = ExperimentalConfig(
        logical_device_id="0,1",
        graph_memory_optimize_config=GraphMemoryOptimizeConfig(graph_slice="auto"),
    )
    options = NPURunConfig(
        memory_config=MemoryConfig(static_memory_policy=2), experimental_config=experimental
    ).npu_options()
    assert options.get("static_memory_policy") == 2
    assert options.get("experimental_logical_device_id") == "0,1"
    assert options.get("graph_slice") == "auto"
    assert options.get("experimental_logical_device_cluster_deploy_mode") == "LB"


def test_graph_memory_optimize_config_values() -> None:
    with pytest.raises(
        ValueError,
        match=r"GraphMemoryOptimizeConfig\(recompute='full'\): use 'auto', 'manual' or None",
    ):
        GraphMemoryOptimizeConfig(recompute="full")
    with pytest.raises(
        ValueError, match="graph_memory_optimize_config must be a GraphMemoryOptimizeConfig"
    ):
        ExperimentalConfig(graph_memory_optimize_config="auto")


def test_execute_placement_values() -> None:
    assert [p.value for p in NpuExecutePlacement] == [
        "all",
        "cube",
        "vector",
        "taishan",
        "dvpp",
        "host",
    ]


def test_set_npu_default_config_normalises_positional_config() -> None:
    import tensorflow as tf
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    def init(self, target="", graph=None, config=None):
        pass

    given = tf.compat.v1.ConfigProto(log_device_placement=True)
    args, kwargs = set_npu_default_config(init, ("", None, given), {})
    assert args == ("", None)
    config = kwargs["config"]
    assert config is given
    rewrite = config.graph_options.rewrite_options
    assert [o.name for o in rewrite.custom_optimizers] == ["NpuOptimizer"]
    assert (rewrite.remapping, rewrite.memory_optimization) == (
        RewriterConfig.OFF,
        RewriterConfig.OFF,
    )
    assert (config.allow_soft_placement, config.log_device_placement) == (True, False)
    args, kwargs = set_npu_default_config(init, (), {"config": config})
    assert len(kwargs["config"].graph_options.rewrite_options.custom_optimizers) == 1
    _, kwargs = set_npu_default_config(init, (), {})
    assert (
        kwargs["config"].graph_options.rewrite_options.custom_optimizers[0].name == "NpuOptimizer"
    )


def test_decorator_tf_session_passes_normalised_config() -> None:
    seen = []

    class Session:
        @npu_config.decorator_tf_session
        def __init__(self, target="", graph=None, config=None):
            seen.append((target, graph, config))

    Session("grpc://x")
    target, graph, config = seen[0]
    assert (target, graph) == ("grpc://x", None)
    assert config.graph_options.rewrite_options.custom_optimizers[0].name == "NpuOptimizer"
