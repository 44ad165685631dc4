"""Fault specs: the grammar, and errors that name the spec, the bad part and the fix."""

from __future__ import annotations

import math

import pytest

from tf2npu.config.faults import FaultSpec, parse_fault, parse_faults
from tf2npu.errors import ConfigError

RULES = {"matmul_biasadd": ("GraphFusion", ("MatMulBiasAddFusionPass",))}


def parse(text: str) -> FaultSpec:
    return parse_fault(text, RULES, "--inject-fault")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fusion:matmul_biasadd=scale:2",
         FaultSpec("fusion:matmul_biasadd=scale:2", "fusion", "scale", 2.0, rule="matmul_biasadd")),
        ("fusion:MatMulBiasAddFusionPass@d/add=bias:-0.5",
         FaultSpec("fusion:MatMulBiasAddFusionPass@d/add=bias:-0.5", "fusion", "bias", -0.5,
                   rule="matmul_biasadd", root="d/add")),
        ("op:dense/MatMul=bias:1e-3",
         FaultSpec("op:dense/MatMul=bias:1e-3", "op", "bias", 1e-3, node="dense/MatMul")),
        ("op:body_fn:mul=scale:0", FaultSpec("op:body_fn:mul=scale:0", "op", "scale", 0.0,
                                             node="body_fn:mul")),
    ],
)  # fmt: skip
def test_the_grammar(text: str, expected: FaultSpec) -> None:
    assert parse(text) == expected


def test_nan_has_no_number_and_semicolons_separate_specs() -> None:
    first, second = parse_faults(["op:a=nan; fusion:matmul_biasadd=nan", ""], RULES, "env")
    assert (first.node, first.kind, math.isnan(first.value)) == ("a", "nan", True)
    assert second.rule == "matmul_biasadd"
    assert parse_faults([""], RULES, "env") == ()


def test_specs_with_nan_values_are_equal_and_hash_alike_others_differ() -> None:
    a, b = parse("op:a=nan"), FaultSpec("op:a=nan", "op", "nan", float("nan"), node="a")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != parse("op:b=nan") and parse("op:a=bias:1") != parse("op:a=bias:2")
    assert a != "op:a=nan"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("layer:x=nan", r"'layer:x=nan': 'layer' is not a target; write fusion:RULE"),
        ("matmul_biasadd=nan", r"'matmul_biasadd=nan' is not a target"),
        ("op:x", r"'op:x': no =KIND; end the spec with =nan"),
        ("op:=nan", r"no =KIND"),
        ("op:x=nann", r"KIND 'nann' is not a kind; use nan, bias:EPS or scale:F"),
        ("op:x=nan:1", r"KIND 'nan:1' is not a kind"),
        ("op:x=scale", r"KIND 'scale' is not a kind"),
        ("op:x=scale:two", r"scale:'two' needs a number; e.g. scale:2"),
        ("op:x=bias:inf", r"bias:inf is not finite; use nan for NaN values"),
        ("fusion:matmul_bias=nan",
         r"unknown fusion rule 'matmul_bias'; did you mean 'matmul_biasadd'\? docs/fusion.md"),
        ("fusion:matmul_biasadd@=nan", r"empty ROOT after @; name the root node"),
    ],
)  # fmt: skip
def test_errors_name_the_spec_the_part_and_the_fix(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=rf"^--inject-fault spec .*{message}"):
        parse(text)
