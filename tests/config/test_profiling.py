"""profiling_options parsed and checked: honoured keys, keys with no effect here, bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from tf2npu.config.profiling import (
    ProfilingSpec,
    check_options_text,
    parse_options,
    profile_options,
)
from tf2npu.errors import ConfigError


def test_empty_options_take_every_default() -> None:
    assert parse_options("") == ProfilingSpec()
    assert (ProfilingSpec().training_trace, ProfilingSpec().task_trace) == (True, "l1")


def test_profile_options_are_what_a_profile_folder_stands_for() -> None:
    assert profile_options(Path("/w/prof dir/rank_1")) == (
        "profiling_mode=true",
        'profiling_options={"output": "/w/prof dir/rank_1"}',
    )
    assert parse_options(profile_options(Path("/p"))[1].partition("=")[2]).output == "/p"


def test_honoured_keys_and_keys_without_effect() -> None:
    spec = parse_options(
        '{"output": "/p", "training_trace": "off", "task_time": "l0", "fp_point": "a",'
        ' "bp_point": "b", "aic_metrics": "PipeUtilization", "storage_limit": "200MB",'
        ' "mystery": 1}'
    )
    assert (spec.output, spec.training_trace, spec.task_trace) == ("/p", False, "l0")
    assert (spec.fp_point, spec.bp_point) == ("a", "b")
    assert spec.no_effect == ("aic_metrics", "storage_limit")
    assert spec.unknown == ("mystery",)
    assert "device" in spec.to_json()["no_effect"]["aic_metrics"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("training_trace", r"'training_trace' is not JSON"),
        ("[1]", r"is a JSON list, not an object"),
        ('{"training_trace": "yes"}', r'"training_trace" = \'yes\' is not allowed; use "on"'),
        ('{"task_trace": "l2"}', r'"task_trace" = \'l2\' is not allowed; use one of "on"'),
        ('{"task_trace": "on", "task_time": "l0"}', r"disagree .*task_time is the newer name"),
        ('{"aic_metrics": "Cycles"}', r'"aic_metrics" = \'Cycles\' is not allowed; use one of'),
        ('{"output": 3}', r'"output" = 3 is not a string'),
    ],
)
def test_bad_values_name_the_key_the_value_and_the_fix(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_options(text)
    assert check_options_text(text) is not None


def test_the_option_check_accepts_good_text_only() -> None:
    assert check_options_text('{"task_trace": "on"}') is None
    assert "JSON object" in (check_options_text(3) or "")
