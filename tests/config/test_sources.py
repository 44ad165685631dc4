"""Options from a ConfigProto, NPURunConfig arguments, JSON files, the CLI and the environment."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from tf2npu.config.options import EnvSettings
from tf2npu.config.sources import (
    from_cli,
    from_config_proto,
    from_env,
    from_json_file,
    from_run_config,
    parse_text,
    resolve,
    single_rank_environment,
    split_config_proto,
)
from tf2npu.errors import ConfigError, UnknownNameError


class Attr:
    """Duck-typed AttrValue holding one field."""

    def __init__(self, **field):
        ((self.field, value),) = field.items()
        setattr(self, self.field, value)

    def WhichOneof(self, group):
        assert group == "value"
        return self.field


def proto(params, name="NpuOptimizer"):
    optimizer = SimpleNamespace(name=name, parameter_map=params)
    other = SimpleNamespace(name="pruning", parameter_map={"x": Attr(i=1)})
    rewrite = SimpleNamespace(custom_optimizers=[other, optimizer])
    return SimpleNamespace(graph_options=SimpleNamespace(rewrite_options=rewrite))


def test_config_proto_attr_values():
    config = proto(
        {
            "precision_mode": Attr(s=b"allow_mix_precision"),
            "iterations_per_loop": Attr(i=10),
            "mix_compile_mode": Attr(b=False),
        }
    )
    assert from_config_proto(config) == {
        "precision_mode": "allow_mix_precision",
        "iterations_per_loop": 10,
        "mix_compile_mode": False,
    }


def test_config_proto_plain_values():
    config = proto({"precision_mode": "force_fp32", "dump_path": b"/tmp/d", "enable_dump": True})
    assert from_config_proto(config) == {
        "precision_mode": "force_fp32",
        "dump_path": "/tmp/d",
        "enable_dump": True,
    }


def test_config_proto_without_npu_optimizer_is_empty():
    assert from_config_proto(proto({"iterations_per_loop": Attr(i=3)}, name="Other")) == {}


def test_config_proto_wrong_field():
    with pytest.raises(ConfigError) as err:
        from_config_proto(proto({"iterations_per_loop": Attr(s=b"10")}))
    assert str(err.value) == (
        "NpuOptimizer parameter_map['iterations_per_loop'] is set with .s; "
        "'iterations_per_loop' is an int option: set parameter_map['iterations_per_loop'].i instead"
    )


def test_fields_of_earlier_releases_are_converted():
    config = proto({"jit_compile": Attr(b=True), "op_debug_level": Attr(s=b"2")})
    assert from_config_proto(config) == {"jit_compile": "true", "op_debug_level": 2}
    assert from_config_proto(proto({"jit_compile": Attr(b=False)})) == {"jit_compile": "false"}
    with pytest.raises(ConfigError, match="'op_debug_level' = 'high' is not a whole number"):
        from_config_proto(proto({"op_debug_level": Attr(s=b"high")}))


def test_config_proto_unset_attr():
    with pytest.raises(ConfigError, match=r"is set with no value; 'enable_dump' is a bool option"):
        from_config_proto(proto({"enable_dump": Attr(**{"": None})}))


def test_config_proto_unknown_key_suggests():
    with pytest.raises(UnknownNameError) as err:
        from_config_proto(proto({"precison_mode": Attr(s=b"force_fp16")}))
    message = str(err.value)
    # The suggestion first; three close names, not all ~110.
    assert message == (
        "unknown NpuOptimizer option 'precison_mode'; did you mean 'precision_mode'? Close "
        "names: precision_mode, precision_mode_v2, op_precision_mode (108 valid names; "
        "docs/options.md lists them all)"
    )


def test_split_config_proto_leaves_unknown_keys_out_unchecked():
    config = proto(
        {
            "precision_mode": Attr(s=b"force_fp32"),
            "sump_mode": Attr(s=b"all"),
            "enable_auto_mix_precision": Attr(b=False),
            "fp_point": Attr(i=3),  # a wrong field for nothing: unknown keys are not read
        }
    )
    assert split_config_proto(config) == (
        {"precision_mode": "force_fp32"},
        ("enable_auto_mix_precision", "fp_point", "sump_mode"),
    )


def test_resolve_ignores_unknown_keys_unless_strict():
    config = proto({"sump_mode": Attr(s=b"all"), "iterations_per_loop": Attr(i=2)})
    options = resolve(config=config, strict=False)
    assert options.unknown == ("sump_mode",)
    assert options.iterations_per_loop == 2
    assert "sump_mode" not in options.explicit
    with pytest.raises(
        UnknownNameError, match=r"'sump_mode'; did you mean 'dump_mode'\? Close names: "
    ):
        resolve(config=config)


def test_resolve_still_checks_known_keys_when_not_strict():
    config = proto({"sump_mode": Attr(s=b"all"), "precision_mode": Attr(s=b"fastest")})
    with pytest.raises(ConfigError, match=r"option 'precision_mode' = 'fastest' is not valid"):
        resolve(config=config, strict=False)


@pytest.mark.parametrize("mode", ["RL,GA", "GA", "RL", "GA|RL"])
def test_auto_tune_mode_forms_of_real_scripts(mode):
    options = resolve(config=proto({"auto_tune_mode": Attr(s=mode.encode())}))
    assert options.get("auto_tune_mode") == mode
    assert options.no_effect == ("auto_tune_mode",)


def test_auto_tune_mode_rejects_other_values():
    with pytest.raises(ConfigError, match=r"'auto_tune_mode' = 'RL,AOE' is not valid; give RL"):
        resolve(config=proto({"auto_tune_mode": Attr(s=b"RL,AOE")}))


def test_plain_value_of_wrong_type():
    with pytest.raises(ConfigError) as err:
        from_config_proto(proto({"mix_compile_mode": 1}))
    assert str(err.value) == (
        "NpuOptimizer parameter_map['mix_compile_mode']: option 'mix_compile_mode' = 1 (int) is "
        "not a bool; give a bool, e.g. mix_compile_mode=False"
    )


def test_bytes_that_are_not_utf8():
    with pytest.raises(ConfigError, match=r"option 'dump_path' = b'\\xff' is not UTF-8 text"):
        from_config_proto(proto({"dump_path": Attr(s=b"\xff")}))


def test_run_config_arguments_and_config_objects():
    profiling = SimpleNamespace(enable_profiling=True, profiling_options='{"output":"/p"}')
    dump = SimpleNamespace(
        enable_dump=True,
        dump_path="/d",
        dump_step="0|2",
        dump_mode="all",
        enable_dump_debug=False,
        dump_debug_mode="all",
    )
    experimental = SimpleNamespace(
        logical_device_cluster_deploy_mode="LB",
        graph_memory_optimize_config=SimpleNamespace(recompute=None, graph_slice="auto"),
    )
    values = from_run_config(
        {
            "model_dir": "/m",
            "save_checkpoints_steps": 10,
            "iterations_per_loop": 100,
            "precision_mode": None,
            "profiling_config": profiling,
            "dump_config": dump,
            "experimental_config": experimental,
            "graph_memory_max_size": 1024,
        }
    )
    assert values == {
        "enable_data_pre_proc": True,
        "iterations_per_loop": 100,
        "profiling_mode": True,
        "profiling_options": '{"output":"/p"}',
        "enable_dump": True,
        "dump_path": "/d",
        "dump_step": "0|2",
        "dump_mode": "all",
        "enable_dump_debug": False,
        "dump_debug_mode": "all",
        "experimental_logical_device_cluster_deploy_mode": "LB",
        "graph_slice": "auto",
        "graph_memory_max_size": "1024",
    }


def test_run_config_user_can_turn_data_pre_proc_off():
    assert from_run_config({"enable_data_pre_proc": False}) == {"enable_data_pre_proc": False}


def test_run_config_unknown_argument():
    with pytest.raises(
        UnknownNameError,
        match=r"did you mean 'iterations_per_loop'\? \(126 valid names; docs/options.md lists",
    ):
        from_run_config({"iteration_per_loop": 10})


def test_run_config_type_checks():
    with pytest.raises(ConfigError, match=r"^NPURunConfig\(mix_compile_mode=...\): option "):
        from_run_config({"mix_compile_mode": "yes"})
    with pytest.raises(ConfigError, match=r"\.enable_profiling: option 'profiling_mode' = 1"):
        from_run_config({"profiling_config": SimpleNamespace(enable_profiling=1)})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mix_compile_mode=TRUE", True),
        ("mix_compile_mode=0", False),
        ("iterations_per_loop=20", 20),
        ("dump_path=/a=b", "/a=b"),
        ("precision_mode=", ""),
    ],
)
def test_cli_values(text, expected):
    key = text.partition("=")[0]
    assert from_cli([text]) == {key: expected}


def test_cli_errors():
    with pytest.raises(ConfigError, match=r"^--option 'precision_mode': expected KEY=VALUE"):
        from_cli(["precision_mode"])
    with pytest.raises(ConfigError) as err:
        parse_text("enable_dump", "yes")
    assert str(err.value) == (
        "--option enable_dump=yes: 'enable_dump' is a bool; use enable_dump=true or enable_dump=false"
    )
    with pytest.raises(ConfigError, match=r"'iterations_per_loop' is an int; give a whole number"):
        parse_text("iterations_per_loop", "ten")
    with pytest.raises(UnknownNameError, match=r"did you mean 'dump_mode'\?"):
        parse_text("dump_mod", "all")


def test_env_settings():
    settings, fallback = from_env(
        {
            "PRINT_MODEL": "1",
            "ENABLE_FORCE_V2_CONTROL": "1",
            "RANK_SIZE": "8",
            "RANK_ID": "3",
            "DEVICE_ID": "5",
            "ASCEND_DEVICE_ID": "2",
            "ASCEND_OPP_PATH": "/opp",
            "AOE_MODE": "2",
        }
    )
    assert settings == EnvSettings(True, True, 8, 3, 2, "/opp")
    assert fallback == {"aoe_mode": "2"}
    assert from_env({}) == (EnvSettings(), {})
    assert from_env({"DEVICE_ID": "4", "POD_NAME": "1"})[0].device_id == 4


def test_env_bad_integer():
    with pytest.raises(ConfigError) as err:
        from_env({"RANK_SIZE": "eight"})
    assert str(err.value) == (
        "environment variable RANK_SIZE='eight' is not an integer; set it to a number, "
        "e.g. RANK_SIZE=1, or unset it"
    )


def test_resolve_precedence_proto_then_run_config_then_overrides():
    config = proto({"iterations_per_loop": Attr(i=5), "dump_mode": Attr(s=b"input")})
    options = resolve(
        config=config,
        run_config={"iterations_per_loop": 50, "dump_mode": "all"},
        env={"AOE_MODE": "1", "PRINT_MODEL": "1"},
        overrides={"iterations_per_loop": 7},
    )
    assert options.iterations_per_loop == 7
    assert options.dump_mode == "all"
    assert options.enable_data_pre_proc is True
    assert options.get("aoe_mode") == "1"
    assert options.env.print_model is True
    assert options.explicit == {
        "iterations_per_loop",
        "dump_mode",
        "enable_data_pre_proc",
        "aoe_mode",
    }


def test_resolve_aoe_mode_from_a_source_beats_the_environment():
    options = resolve(overrides={"aoe_mode": "4"}, env={"AOE_MODE": "1"})
    assert options.get("aoe_mode") == "4"


def test_resolve_validates():
    with pytest.raises(ConfigError, match=r"^option 'iterations_per_loop' = 0 is not valid"):
        resolve(overrides={"iterations_per_loop": 0})


def test_resolve_takes_typed_overrides_and_refuses_mistyped_or_unknown_ones():
    assert resolve(overrides=from_cli(["enable_data_pre_proc=true"])).enable_data_pre_proc is True
    with pytest.raises(ConfigError) as err:
        resolve(overrides={"iterations_per_loop": "7"})
    assert str(err.value) == (
        "overrides: option 'iterations_per_loop' = '7' (str) is not an int; give an int, "
        "e.g. iterations_per_loop=1"
    )
    with pytest.raises(UnknownNameError, match=r"unknown NpuOptimizer option 'iteration_per_loop'"):
        resolve(overrides={"iteration_per_loop": 7})


def test_bad_aoe_mode_names_the_variable_not_the_key():
    with pytest.raises(ConfigError) as err:
        resolve(env={"AOE_MODE": "9"})
    assert str(err.value) == (
        "environment variable AOE_MODE='9' is not valid (it sets option 'aoe_mode'); use one "
        "of: '1', '2', '4'; or unset AOE_MODE"
    )
    # Ignored (as the adapter ignores it) when a source sets aoe_mode itself.
    assert resolve(overrides={"aoe_mode": "2"}, env={"AOE_MODE": "9"}).get("aoe_mode") == "2"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: resolve(overrides=from_cli([f"iterations_per_loop={2**63}"])),
         f"--option iterations_per_loop={2**63} does not fit in a 64-bit integer (the largest "
         "is 9223372036854775807); give a smaller number, e.g. iterations_per_loop=1"),
        (lambda: from_run_config({"iterations_per_loop": -(2**63) - 1}),
         f"NPURunConfig(iterations_per_loop=...): option 'iterations_per_loop' = {-(2**63) - 1} "
         "does not fit in a 64-bit integer (the largest is 9223372036854775807); give a "
         "smaller number, e.g. iterations_per_loop=1"),
    ],
)  # fmt: skip
def test_ints_beyond_int64_are_refused(call, message):
    with pytest.raises(ConfigError) as err:
        call()
    assert str(err.value) == message
    big = resolve(overrides=from_cli([f"graph_exec_timeout={2**63 - 1}"]))
    assert big.get("graph_exec_timeout") == 2**63 - 1


@pytest.mark.parametrize(
    ("env", "added"),
    [
        ({}, {"RANK_SIZE": "1", "RANK_ID": "0", "ASCEND_DEVICE_ID": "0", "DEVICE_ID": "0",
              "DEVICE_INDEX": "0"}),
        ({"POD_NAME": "2", "RANK_SIZE": "8", "ASCEND_DEVICE_ID": "4"},
         {"DEVICE_ID": "4", "DEVICE_INDEX": "4"}),
        ({"RANK_SIZE": "1", "RANK_ID": "0", "ASCEND_DEVICE_ID": "1", "DEVICE_ID": "1",
          "DEVICE_INDEX": "1"}, {}),
    ],
)  # fmt: skip
def test_single_rank_environment_fills_only_what_is_unset(env, added):
    assert single_rank_environment(env) == added


# -- JSON files ---------------------------------------------------------------------------------


def test_json_file_values_are_typed(tmp_path: Path):
    path = tmp_path / "npu.json"
    path.write_text('{"precision_mode": "force_fp32", "mix_compile_mode": true, '
                    '"iterations_per_loop": 1}')  # fmt: skip
    assert from_json_file(path, "--config-from") == {
        "precision_mode": "force_fp32",
        "mix_compile_mode": True,
        "iterations_per_loop": 1,
    }


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        ('["precision_mode"]', ConfigError,
         "expected a JSON object of NpuOptimizer parameter_map keys to values, e.g. "
         '{"precision_mode": "allow_mix_precision", "mix_compile_mode": true}; got a JSON list'),
        ('{"precison_mode": "x"}', UnknownNameError,
         "unknown NpuOptimizer option 'precison_mode'; did you mean 'precision_mode'?"),
        ('{"iterations_per_loop": null}', ConfigError,
         "key 'iterations_per_loop' is null; leave the key out to keep its default"),
        ('{"mix_compile_mode": "yes"}', ConfigError,
         "key 'mix_compile_mode': option 'mix_compile_mode' = 'yes' (str) is not a bool"),
        ('{"a": 1,}', ConfigError, "invalid JSON at line 1, column 9"),
    ],
)  # fmt: skip
def test_json_file_errors_name_the_file_the_key_and_the_fix(
    tmp_path: Path, content, error, message
):
    path = tmp_path / "npu.json"
    path.write_text(content)
    with pytest.raises(error) as err:
        from_json_file(path, "--config-from")
    assert str(err.value).startswith(f"--config-from file {str(path)!r}")
    assert message in str(err.value)


def test_profiling_from_the_environment_fills_what_no_source_gave() -> None:
    env = {"PROFILING_MODE": "true", "PROFILING_OPTIONS": '{"output": "/env"}'}
    options = resolve(env=env)
    assert (options.profiling_mode, options.profiling_options) == (True, '{"output": "/env"}')
    config_wins = resolve(overrides={"profiling_mode": False}, env=env)
    assert config_wins.profiling_mode is False


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PROFILING_MODE": "on"}, r"PROFILING_MODE='on' is not a boolean .*PROFILING_MODE=true"),
        ({"PROFILING_OPTIONS": "trace"}, r"PROFILING_OPTIONS='trace' is not valid .*not JSON"),
    ],
)
def test_bad_profiling_variables_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve(env=env)
