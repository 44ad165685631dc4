"""Per-dtype default tolerances and ``--tolerance PATTERN=ATOL,RTOL`` rules."""

from __future__ import annotations

import pytest

from tf2npu.debug.compare.tolerance import (
    Tolerance,
    ToleranceRule,
    Tolerances,
    coarsest,
    default_tolerance,
)
from tf2npu.errors import UsageError


def test_float16_is_not_judged_by_float32_bounds() -> None:
    assert default_tolerance("float16") == Tolerance(1e-2, 1e-2, "float16 default")
    assert default_tolerance("float32") == Tolerance(1e-5, 1e-4, "float32 default")
    assert default_tolerance("bfloat16").atol > default_tolerance("float16").atol
    assert default_tolerance("float64").rtol < default_tolerance("float32").rtol
    assert default_tolerance("int32") == Tolerance(0.0, 0.0, "exact (not a float dtype)")


@pytest.mark.parametrize(
    ("dtypes", "expected"),
    [
        (["float32", "float16"], "float16"),
        (["float64", "bfloat16", "float16"], "bfloat16"),
        (["int32", "float32", None], "float32"),
        (["int64", "bool", None], None),
        ([], None),
    ],
)
def test_coarsest_float_dtype(dtypes, expected) -> None:
    assert coarsest(dtypes) == expected


def test_rules_are_fnmatch_patterns_over_op_names_and_the_last_match_wins() -> None:
    rules = Tolerances.parse(["dense*=1e-3,1e-2", "dense/Bias*=0.5,0", "*/Relu=2,3"])
    assert rules.resolve(("dense/MatMul",), "float16") == Tolerance(
        1e-3, 1e-2, "--tolerance 'dense*=1e-3,1e-2'"
    )
    assert rules.resolve(("dense/MatMul", "dense/BiasAdd"), "float16").atol == 0.5
    assert rules.resolve(("conv/Relu",), None).rtol == 3.0
    assert rules.resolve(("Dense/MatMul",), "float16") == default_tolerance("float16")
    assert rules.resolve(("x",), None) == default_tolerance("int8")


def test_a_rule_with_an_equals_sign_in_its_pattern_splits_at_the_last_one() -> None:
    assert ToleranceRule.parse("a=b=1,2") == ToleranceRule("a=b", 1.0, 2.0, "a=b=1,2")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "dense",
            "--tolerance 'dense': give PATTERN=ATOL,RTOL, e.g. --tolerance 'dense/*=1e-3,1e-2'",
        ),
        ("=1,2", "--tolerance '=1,2': give PATTERN=ATOL,RTOL"),
        ("d=1", "--tolerance 'd=1': '1' is not ATOL,RTOL; give PATTERN=ATOL,RTOL"),
        ("d=1,2,3", "--tolerance 'd=1,2,3': '1,2,3' is not ATOL,RTOL"),
        ("d=abc,1", "--tolerance 'd=abc,1': ATOL 'abc' is not a number"),
        ("d=1,-2", "--tolerance 'd=1,-2': RTOL '-2' must be a finite number >= 0"),
        ("d=nan,1", "--tolerance 'd=nan,1': ATOL 'nan' must be a finite number >= 0"),
        ("d=1,inf", "--tolerance 'd=1,inf': RTOL 'inf' must be a finite number >= 0"),
    ],
)
def test_bad_rules_name_the_value_and_the_fix(text, message) -> None:
    with pytest.raises(UsageError) as error:
        Tolerances.parse([text])
    assert str(error.value).startswith(message)
    assert str(error.value).endswith("e.g. --tolerance 'dense/*=1e-3,1e-2'")
