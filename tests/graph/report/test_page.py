"""The house look's line breaks: names wrap only between their parts, numbers never."""

from __future__ import annotations

import doctest

import pytest

from tf2npu.graph.report import page
from tf2npu.graph.report.page import breakable


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(page).failed == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,234.5 -1e-05 nan 12%", "1,234.5 -1e-05 nan 12%"),
        ("BiasAdd_grad", "BiasAdd_grad"),
        ("ResourceApplyAdamWithAmsgrad", "Resource<wbr>Apply<wbr>Adam<wbr>With<wbr>Amsgrad"),
        ("layer->output", "layer-&gt;<wbr>output"),
        ("x:0", "x:0"),
    ],
)  # fmt: skip
def test_breakable(text: str, expected: str) -> None:
    assert breakable(text) == expected
