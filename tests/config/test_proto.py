"""Writing options into an NpuOptimizer parameter_map, and the NPUEstimator key set."""

from types import SimpleNamespace

import pytest

from tf2npu.config.proto import job_values, npu_parameter_values, write_parameter_map
from tf2npu.config.sources import from_config_proto
from tf2npu.errors import ConfigError, UnknownNameError


class Attr:
    """Duck-typed AttrValue: remembers which field was set."""

    def __setattr__(self, name, value):
        object.__setattr__(self, "field", name)
        object.__setattr__(self, name, value)


class ParameterMap(dict):
    def __missing__(self, key):
        self[key] = Attr()
        return self[key]


def custom_optimizer():
    return SimpleNamespace(name="NpuOptimizer", parameter_map=ParameterMap())


def test_each_kind_goes_to_its_field():
    optimizer = custom_optimizer()
    write_parameter_map(
        optimizer,
        {"mix_compile_mode": True, "iterations_per_loop": 10, "precision_mode": "force_fp32"},
    )
    written = {k: (a.field, getattr(a, a.field)) for k, a in optimizer.parameter_map.items()}
    assert written == {
        "mix_compile_mode": ("b", True),
        "iterations_per_loop": ("i", 10),
        "precision_mode": ("s", b"force_fp32"),
    }


def test_bytes_string_is_accepted():
    optimizer = custom_optimizer()
    write_parameter_map(optimizer, {"dump_path": b"/tmp/d"})
    assert optimizer.parameter_map["dump_path"].s == b"/tmp/d"


def test_unknown_key_is_named():
    with pytest.raises(UnknownNameError, match=r"'precison_mode'.*did you mean 'precision_mode'"):
        write_parameter_map(custom_optimizer(), {"precison_mode": "force_fp32"})


def test_wrong_kind_is_a_config_error():
    with pytest.raises(ConfigError, match=r"'iterations_per_loop' = '10' .* is not an int"):
        write_parameter_map(custom_optimizer(), {"iterations_per_loop": "10"})


def test_job_values_from_tf_config():
    assert job_values({}) == {"job": "localhost", "task_index": 0}
    assert job_values({"TF_CONFIG": '{"task": {"type": "worker", "index": 3}}'}) == {
        "job": "worker",
        "task_index": 3,
    }
    assert job_values({"TF_CONFIG": '{"cluster": {}}'}) == {"job": "localhost", "task_index": 0}


def test_job_values_bad_tf_config():
    with pytest.raises(ConfigError, match=r"TF_CONFIG='\{bad' is not valid JSON"):
        job_values({"TF_CONFIG": "{bad"})


def test_estimator_values_add_the_fixed_keys_and_dump_defaults():
    values = npu_parameter_values(
        {"iterations_per_loop": 1, "precision_mode": None, "hcom_parallel": True}, {}
    )
    assert values == {
        "enable_data_pre_proc": True,
        "iterations_per_loop": 1,
        "hcom_parallel": True,
        "enable_dump": False,
        "enable_dump_debug": False,
        "use_off_line": True,
        "min_group_size": True,
        "job": "localhost",
        "task_index": 0,
    }


def test_estimator_values_aoe_mode_gets_default_work_path():
    values = npu_parameter_values({"aoe_mode": "2"}, {})
    assert (values["aoe_mode"], values["work_path"]) == ("2", "./")


def test_estimator_values_dynamic_input_only_when_complete():
    partial = SimpleNamespace(input_shape="data:-1,3", dynamic_dims=None, dynamic_node_type=0)
    values = npu_parameter_values({"dynamic_input_config": partial}, {})
    assert "input_shape" not in values and "dynamic_node_type" not in values
    full = SimpleNamespace(input_shape="data:-1,3", dynamic_dims="1;2", dynamic_node_type=1)
    values = npu_parameter_values({"dynamic_input_config": full}, {})
    assert (values["input_shape"], values["dynamic_dims"], values["dynamic_node_type"]) == (
        "data:-1,3",
        "1;2",
        1,
    )


@pytest.mark.tf
def test_round_trip_through_a_real_config_proto():
    tf = pytest.importorskip("tensorflow")
    config = tf.compat.v1.ConfigProto()
    optimizer = config.graph_options.rewrite_options.custom_optimizers.add()
    optimizer.name = "NpuOptimizer"
    values = {
        "use_off_line": True,
        "iterations_per_loop": 4,
        "precision_mode": "allow_mix_precision",
        "enable_exception_dump": 2,
        "job": "localhost",
    }
    write_parameter_map(optimizer, values)
    assert optimizer.parameter_map["precision_mode"].s == b"allow_mix_precision"
    assert from_config_proto(config) == values
