"""Constraints over resolved options; each error names option, value and fix."""

import os
from pathlib import Path

import pytest

from tf2npu.config.options import NpuOptions
from tf2npu.config.validate import no_effect_report, validate
from tf2npu.errors import ConfigError


def check(values):
    validate(NpuOptions.from_values(values))


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"mix_compile_mode": True, "iterations_per_loop": 1},
        {"iterations_per_loop": 100},
        {"precision_mode": "allow_mix_precision", "modify_mixlist": "/m.json"},
        {"precision_mode_v2": "mixed_bfloat16", "modify_mixlist": "/m.json"},
        {"op_select_implmode": "high_precision", "optypelist_for_implmode": "Pooling,LRN"},
        {"variable_placement": "Host", "mix_compile_mode": True},
        {"in_out_pair": "[[['a'],['b']]]", "mix_compile_mode": True},
        {"dump_path": "/no/such/dir", "dump_step": "0|5|10-20"},
        {"input_shape": "data:-1,3", "dynamic_dims": "1;2", "dynamic_node_type": 1},
        {"mstune_mode": "1", "work_path": "/w"},
        {"session_device_id": 0, "local_device_list": "0,1", "local_rank_id": 7},
    ],
)
def test_valid_combinations(values):
    check(values)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"mix_compile_mode": True, "iterations_per_loop": 10},
            "option 'iterations_per_loop' = 10 cannot be used with mix_compile_mode=True; "
            "set iterations_per_loop=1 or mix_compile_mode=False",
        ),
        (
            {"iterations_per_loop": 0},
            "option 'iterations_per_loop' = 0 is not valid; give an integer >= 1",
        ),
        (
            {"precision_mode": "fp16"},
            "option 'precision_mode' = 'fp16' is not valid; use one of: 'force_fp32', "
            "'allow_fp32_to_fp16', 'force_fp16', 'must_keep_origin_dtype', 'allow_mix_precision', "
            "'cube_fp16in_fp32out', 'allow_mix_precision_fp16', 'allow_mix_precision_bf16', "
            "'allow_fp32_to_bf16'",
        ),
        (
            {"precision_mode": "force_fp16", "precision_mode_v2": "fp16"},
            "options 'precision_mode' = 'force_fp16' and 'precision_mode_v2' = 'fp16' cannot "
            "both be given; keep only one of them",
        ),
        (
            {"modify_mixlist": "/m.json"},
            "option 'modify_mixlist' = '/m.json' needs a mixed-precision mode but the precision "
            "mode is 'allow_fp32_to_fp16'; set precision_mode to allow_mix_precision, "
            "allow_mix_precision_fp16, allow_mix_precision_bf16 or precision_mode_v2 "
            "mixed_float16, mixed_bfloat16, mixed_hif8, or drop modify_mixlist",
        ),
        (
            {"optypelist_for_implmode": "Pooling"},
            "option 'optypelist_for_implmode' = 'Pooling' requires op_select_implmode; set "
            "op_select_implmode (e.g. high_precision) or drop optypelist_for_implmode",
        ),
        (
            {"variable_placement": "Host"},
            "option 'variable_placement' = 'Host' requires mix_compile_mode=True; "
            "set mix_compile_mode=True or drop variable_placement",
        ),
        (
            {"variable_placement": "host"},
            "option 'variable_placement' = 'host' is not valid; use one of: 'Device', 'Host'",
        ),
        (
            {"in_out_pair": "[[['a'],['b']]]"},
            "option 'in_out_pair' = \"[[['a'],['b']]]\" requires mix_compile_mode=True",
        ),
        (
            {"session_device_id": -1},
            "option 'session_device_id' = -1 is not valid; give an integer >= 0",
        ),
        (
            {"local_device_list": "0;1"},
            "option 'local_device_list' = '0;1' is not valid; give comma",
        ),
        (
            {"local_rank_id": 8},
            "option 'local_rank_id' = 8 is not valid; give an integer from 0 to 7",
        ),
        ({"graph_run_mode": 2}, "option 'graph_run_mode' = 2 is not valid; use one of: 0, 1"),
        (
            {"dump_step": "5-1"},
            "option 'dump_step' = '5-1' is not valid; the adapter says \"in range steps, the "
            "first step is >= second step, correct example:'0|5|10-20'\"; in '5-1' the first "
            "step must be smaller than the second; write '1-5' instead",
        ),
        (
            {"enable_compress_weight": True, "compress_weight_conf": "/c"},
            "option 'enable_compress_weight' = True cannot be combined with compress_weight_conf",
        ),
        (
            {"input_shape": "data:-1"},
            "option 'input_shape' = 'data:-1' needs all of input_shape, dynamic_dims, "
            "dynamic_node_type; also set dynamic_dims, dynamic_node_type or drop them all",
        ),
        (
            {
                "input_shape": "d:-1",
                "dynamic_dims": "1;2",
                "dynamic_node_type": 0,
                "mix_compile_mode": True,
            },
            "option 'input_shape' = 'd:-1' cannot be used with mix_compile_mode=True",
        ),
        (
            {
                "input_shape": "d:-1",
                "dynamic_dims": "1;2",
                "dynamic_node_type": 0,
                "compile_dynamic_mode": True,
            },
            "option 'compile_dynamic_mode' = True cannot be used with the dynamic-dims options",
        ),
        (
            {
                "input_shape": "d:-1",
                "dynamic_dims": "1;2",
                "dynamic_node_type": 0,
                "compile_hybrid_mode": 1,
            },
            "option 'compile_hybrid_mode' = 1 requires dynamic_node_type=1",
        ),
        (
            {
                "dynamic_input": True,
                "dynamic_graph_execute_mode": "lazy_recompile",
                "iterations_per_loop": 3,
            },
            "option 'iterations_per_loop' = 3 cannot be used with "
            "dynamic_graph_execute_mode='lazy_recompile'; set iterations_per_loop=1",
        ),
        ({"mstune_mode": "2"}, "option 'mstune_mode' = '2' requires work_path"),
        ({"buffer_optimize": "l1"}, "option 'buffer_optimize' = 'l1' is not valid; use one of"),
    ],
)
def test_invalid(values, message):
    with pytest.raises(ConfigError) as err:
        check(values)
    assert message in str(err.value)


def test_defaults_are_not_checked_only_explicit_values():
    # session_device_id's absent default is -1, which an explicit value may not be.
    check({"hcom_parallel": False})


def test_no_effect_report_lists_each_given_option_once_with_its_reason():
    options = NpuOptions.from_values(
        {"buffer_optimize": "off_optimize", "hcom_parallel": False, "iterations_per_loop": 2}
    )
    assert no_effect_report(options) == [
        ("buffer_optimize", "device L2"),
        ("hcom_parallel", "collective communication on the device (HCCL)"),
    ]


# -- dumps: the adapter's checks, at resolution time ----------------------------------------------


@pytest.mark.parametrize("switch", ["enable_dump", "enable_dump_debug"])
def test_a_dump_switch_needs_a_dump_path(switch):
    with pytest.raises(ConfigError) as err:
        check({switch: True})
    assert str(err.value) == (
        f'option {switch!r} = True needs dump_path; the adapter says "if use dump function, '
        'dump_path must be set."; set dump_path to an existing directory you can read and '
        "write, e.g. dump_path=./dump after mkdir dump"
    )


def test_dump_switches_are_mutually_exclusive(tmp_path: Path):
    with pytest.raises(ConfigError) as err:
        check({"enable_dump": True, "enable_dump_debug": True, "dump_path": str(tmp_path)})
    assert str(err.value) == (
        "options 'enable_dump' = True and 'enable_dump_debug' = True are mutually exclusive "
        "(the adapter's docs allow one of them per session); set enable_dump=False to collect "
        "overflow data, or enable_dump_debug=False to dump tensors"
    )


@pytest.mark.parametrize("switch", ["enable_dump", "enable_dump_debug"])
def test_an_existing_writable_dump_directory_is_accepted(tmp_path: Path, switch):
    check({switch: True, "dump_path": str(tmp_path), "dump_data": "stats", "dump_layer": "a b"})


def test_a_relative_dump_path_is_taken_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dump").mkdir()
    check({"enable_dump": True, "dump_path": "dump"})
    with pytest.raises(ConfigError) as err:
        check({"enable_dump": True, "dump_path": "out/d"})
    assert str(err.value) == (
        f"option 'dump_path' = 'out/d' (relative to the working directory: "
        f'{str(tmp_path / "out" / "d")!r}) does not exist; the adapter says "the path out/d is '
        'not directory."; create the directory first (mkdir -p out/d) or set dump_path to an '
        "existing one"
    )


def test_a_dump_path_that_is_a_file_is_refused(tmp_path: Path):
    file = tmp_path / "f"
    file.write_text("")
    with pytest.raises(ConfigError) as err:
        check({"enable_dump_debug": True, "dump_path": str(file)})
    assert str(err.value) == (
        f"option 'dump_path' = {str(file)!r} is a file, not a directory; the adapter says "
        f'"the path {file} is not directory."; create the directory first (mkdir -p {file}) '
        "or set dump_path to an existing one"
    )


def test_a_dump_path_without_read_and_write_permission_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    seen = []

    def access(path, mode):
        seen.append((path, mode))
        return False

    # Tests may run as root, for whom every directory is readable and writable.
    monkeypatch.setattr(os, "access", access)
    with pytest.raises(ConfigError) as err:
        check({"enable_dump": True, "dump_path": str(tmp_path)})
    assert seen == [(str(tmp_path), os.R_OK | os.W_OK)]
    assert str(err.value) == (
        f"option 'dump_path' = {str(tmp_path)!r} is not readable and writable by this user; the "
        f'adapter says "the path {tmp_path} does\'t have read, write permissions."; give '
        f"yourself both (chmod u+rw {tmp_path}) or set dump_path to another directory"
    )


def test_the_dump_path_is_not_checked_while_dumps_are_off():
    check({"dump_path": "/no/such/dir", "dump_mode": "all", "dump_debug_mode": "all"})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"dump_mode": "both"}, "option 'dump_mode' = 'both' is not valid; the adapter says "
                                '"dump mode should be one of the list:[input, output, all]"'),
        ({"dump_debug_mode": "inf"}, "option 'dump_debug_mode' = 'inf' is not valid; the adapter "
                                     'says "dump debug mode should be one of the list:'),
        ({"dump_data": "npy"}, "option 'dump_data' = 'npy' is not valid; the adapter says "
                               "\"dump_data should be 'tensor' or 'stats'.\"; use one of: "
                               "'tensor', 'stats'"),
        ({"dump_step": "0,5"}, "option 'dump_step' = '0,5' is not valid; the adapter says "
                               "\"dump_step string style is error"),
    ],
)  # fmt: skip
def test_bad_dump_values_quote_the_adapter(values, message):
    with pytest.raises(ConfigError) as err:
        check(values)
    assert str(err.value).startswith(message)
