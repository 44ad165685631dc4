"""The option table: real names, kinds and defaults; NpuOptions resolves defaults in one place."""

import subprocess
import sys
from dataclasses import fields

import pytest

from tf2npu.config.options import (
    OPTIONS,
    ROWS,
    Effect,
    EnvSettings,
    NpuOptions,
    typed_field_names,
)


def test_every_row_has_a_unique_real_name():
    assert len(ROWS) == len(OPTIONS) == 108
    for name in ("precision_mode", "HCCL_algorithm", "experimental_logical_device_id", "aoe_mode"):
        assert name in OPTIONS


@pytest.mark.parametrize(
    ("name", "kind", "default"),
    [
        ("use_off_line", "b", True),
        ("enable_data_pre_proc", "b", False),
        ("iterations_per_loop", "i", 1),
        ("precision_mode", "s", None),
        ("graph_run_mode", "i", 1),
        ("enable_exception_dump", "i", 2),
        ("hcom_parallel", "b", True),
        ("dump_mode", "s", "output"),
        ("jit_compile", "s", "auto"),
        ("input_fusion_size", "i", 131072),
        ("local_rank_id", "i", -1),
        ("variable_placement", "s", "Device"),
        ("stream_sync_timeout", "i", -1),
    ],
)
def test_kinds_and_absent_defaults_match_the_reference(name, kind, default):
    assert (OPTIONS[name].kind, OPTIONS[name].default) == (kind, default)


def test_typed_fields_are_exactly_the_honoured_options_with_the_table_defaults():
    honoured = {s.name for s in ROWS if s.effect is Effect.HONOURED}
    assert typed_field_names() == honoured
    for f in fields(NpuOptions):
        if f.name in honoured:
            assert f.default == OPTIONS[f.name].default, f.name


def test_no_effect_rows_say_why():
    for spec in ROWS:
        assert spec.note, spec.name


def test_from_values_fills_defaults_and_records_explicit_names():
    options = NpuOptions.from_values({"iterations_per_loop": 10, "hcom_parallel": False})
    assert options.iterations_per_loop == 10
    assert options.get("hcom_parallel") is False
    assert options.get("buffer_optimize") == "l2_optimize"
    assert options.precision_mode is None
    assert options.explicit == frozenset({"iterations_per_loop", "hcom_parallel"})
    assert options.no_effect == ("hcom_parallel",)
    assert options.env == EnvSettings()


def test_get_unknown_raises_key_error():
    with pytest.raises(KeyError):
        NpuOptions().get("no_such_option")


def test_other_mapping_is_read_only():
    options = NpuOptions.from_values({})
    with pytest.raises(TypeError):
        options.other["job"] = "ps"  # type: ignore[index]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, "allow_fp32_to_fp16"),
        ({"graph_run_mode": 0}, "force_fp16"),
        ({"precision_mode": "force_fp32"}, "force_fp32"),
        ({"precision_mode_v2": "mixed_float16"}, "mixed_float16"),
    ],
)
def test_effective_precision_mode(values, expected):
    assert NpuOptions.from_values(values).effective_precision_mode == expected


def test_mixed_precision_modes():
    assert NpuOptions.from_values({"precision_mode": "allow_mix_precision_bf16"}).is_mixed_precision
    assert NpuOptions.from_values({"precision_mode_v2": "mixed_hif8"}).is_mixed_precision
    assert not NpuOptions.from_values({"precision_mode": "force_fp16"}).is_mixed_precision


def test_dump_data_and_layer_and_profiling_are_typed_and_honoured():
    options = NpuOptions.from_values(
        {"dump_data": "stats", "dump_layer": "conv1 fc", "profiling_mode": True}
    )
    assert (options.dump_data, options.dump_layer) == ("stats", "conv1 fc")
    assert NpuOptions().dump_data == "tensor"
    assert options.profiling_mode is True
    assert options.get("profiling_mode") is True
    assert options.no_effect == ()
    assert "tf2npu profile" in OPTIONS["profiling_mode"].note


def test_profiling_options_must_be_a_json_object():
    check = OPTIONS["profiling_options"].check
    assert check('{"output": "/tmp/p", "task_trace": "l0"}') is None
    assert "not JSON" in (check("training_trace") or "")
    assert "\"task_trace\" = 'maybe'" in (check('{"task_trace": "maybe"}') or "")


@pytest.mark.parametrize(
    "name",
    ["use_off_line", "in_out_pair_flag", "in_out_pair"],
)
def test_options_nothing_reads_are_no_effect_and_reported_when_set(name):
    spec = OPTIONS[name]
    assert spec.effect is Effect.NO_EFFECT_HERE
    value = {"b": not spec.default, "s": "x"}[spec.kind]
    assert NpuOptions.from_values({name: value}).no_effect == (name,)


def test_spec_check_tuple_requires_same_type():
    assert OPTIONS["graph_run_mode"].check(1) is None
    assert OPTIONS["graph_run_mode"].check(True) == "use one of: 0, 1"
    assert OPTIONS["job"].check("anything") is None


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        (
            "dump_mode",
            "both",
            'the adapter says "dump mode should be one of the list:[input, output, all]"; '
            "use one of: 'input', 'output', 'all'",
        ),
        (
            "dump_debug_mode",
            "overflow",
            'the adapter says "dump debug mode should be one of the list:[aicore_overflow, '
            "atomic_overflow, all]\"; use one of: 'aicore_overflow', 'atomic_overflow', 'all'",
        ),
        (
            "dump_data",
            "npy",
            "the adapter says \"dump_data should be 'tensor' or 'stats'.\"; "
            "use one of: 'tensor', 'stats'",
        ),
    ],
)
def test_dump_value_checks_quote_the_adapter_then_give_the_fix(name, value, expected):
    assert OPTIONS[name].check(value) == expected
    assert OPTIONS[name].check(OPTIONS[name].default) is None


def test_config_package_never_imports_tensorflow():
    code = (
        "import sys, tf2npu.config.sources, tf2npu.config.mixlist, tf2npu.config.fusion_switch,"
        " tf2npu.config.option_docs\n"
        "print(','.join(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
