"""The option table: real names, kinds and defaults; NpuOptions resolves defaults in one place."""

import subprocess
import sys
from dataclasses import fields

import pytest

from tf2npu.config.options import (
    DEFAULT_PROFILING_OPTIONS,
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


def test_profiling_options_default_json_only_when_profiling_is_on():
    assert NpuOptions.from_values({}).effective_profiling_options == ""
    on = NpuOptions.from_values({"profiling_mode": True})
    assert on.effective_profiling_options == DEFAULT_PROFILING_OPTIONS
    given = NpuOptions.from_values({"profiling_mode": True, "profiling_options": '{"output":"/p"}'})
    assert given.effective_profiling_options == '{"output":"/p"}'


def test_spec_check_tuple_requires_same_type():
    assert OPTIONS["graph_run_mode"].check(1) is None
    assert OPTIONS["graph_run_mode"].check(True) == "use one of: 0, 1"
    assert OPTIONS["dump_mode"].check("both") == "use one of: 'input', 'output', 'all'"
    assert OPTIONS["job"].check("anything") is None


def test_config_package_never_imports_tensorflow():
    code = (
        "import sys, tf2npu.config.sources, tf2npu.config.mixlist, tf2npu.config.fusion_switch,"
        " tf2npu.config.option_docs\n"
        "print(','.join(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
