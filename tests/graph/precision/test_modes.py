"""The mode table covers every precision_mode spelling the options accept."""

from __future__ import annotations

import pytest

from tf2npu.config.options import PRECISION_MODES, PRECISION_MODES_V2
from tf2npu.errors import UnknownNameError
from tf2npu.graph.precision.modes import MODES, Policy, mode_named


def test_every_accepted_mode_value_has_a_policy() -> None:
    assert set(MODES) == {*PRECISION_MODES, *PRECISION_MODES_V2}


@pytest.mark.parametrize(
    ("name", "policy", "lower"),
    [
        ("allow_fp32_to_fp16", Policy.FALLBACK, "float16"),
        ("fp16", Policy.FORCE, "float16"),
        ("force_fp16", Policy.FORCE, "float16"),
        ("origin", Policy.KEEP, "float16"),
        ("mixed_float16", Policy.MIXED, "float16"),
        ("allow_mix_precision_bf16", Policy.MIXED, "bfloat16"),
        ("allow_fp32_to_bf16", Policy.FALLBACK, "bfloat16"),
    ],
)
def test_v1_and_v2_spellings_map_to_the_same_policies(
    name: str, policy: Policy, lower: str
) -> None:
    mode = mode_named(name)
    assert (mode.policy, mode.lower) == (policy, lower)
    assert mode.tag == ("bf16" if lower == "bfloat16" else "fp16")


def test_an_unknown_mode_names_the_value_and_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError) as info:
        mode_named("half")
    assert info.value.name == "half"
    assert "must_keep_origin_dtype" in info.value.known
