"""Name tables: line breaks only between name parts, other cells whole, rows marked."""

from __future__ import annotations

import doctest

import pytest

from tf2npu.graph.report import names
from tf2npu.graph.report.names import breakable, name_table
from tf2npu.graph.report.page import ROWS_SHOWN


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(names).failed == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("loss:0", "loss:0"),
        ("dense/fused:output:0", "dense/<wbr>fused:<wbr>output:0"),
        ("keep_origin_dtype", "keep_origin_dtype"),
        ("tower_0/attention/key/bias", "tower_0/<wbr>attention/<wbr>key/<wbr>bias"),
        ("sparse_softmax_cross_entropy_loss/value:0",
         "sparse_<wbr>softmax_<wbr>cross_<wbr>entropy_<wbr>loss/<wbr>value:0"),
        ("a<b>/c&d", "a&lt;b&gt;/<wbr>c&amp;d"),
        ("", ""),
    ],
)  # fmt: skip
def test_breakable(text: str, expected: str) -> None:
    assert breakable(text) == expected


def test_name_columns_break_between_parts_and_numbers_stay_whole() -> None:
    html = name_table(["op", "cosine", "file"], [["dense/fused", 0.5, "dumps/x.npy"]], names=(0, 2))
    assert '<table class="names">' in html
    assert "<td>dense/<wbr>fused</td>" in html and "<td>dumps/x.<wbr>npy</td>" in html
    assert '<td class="n">0.5</td>' in html


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e-05", '<span class="num">1e-05</span>'),
        ("-inf", '<span class="num">-inf</span>'),
        ("1,000", '<span class="num">1,000</span>'),
        ("0.465 > 0.01", '<span class="num">0.465</span> <span class="num">&gt;</span> '
                         '<span class="num">0.01</span>'),
    ],
)  # fmt: skip
def test_numbers_never_break_inside_and_cells_of_them_only_between(
    text: str, expected: str
) -> None:
    assert f'<td class="n">{expected}</td>' in name_table(["x"], [[text]], names=())


def test_cells_of_words_are_house_cells() -> None:
    assert "<td>within 1e-05 + 0.0001</td>" in name_table(
        ["x"], [["within 1e-05 + 0.0001"]], names=()
    )


def test_rows_get_their_class() -> None:
    html = name_table(["op"], [["a"], ["b"]], row_class=["first", ""])
    assert '<tr class="first"><td>a</td></tr>' in html and "<tr><td>b</td></tr>" in html


def test_no_rows_and_too_many_rows() -> None:
    assert name_table(["op"], []) == '<p class="note">none</p>'
    html = name_table(["op"], [[str(i)] for i in range(ROWS_SHOWN + 3)])
    assert html.count("<tr>") == ROWS_SHOWN + 1 and "3 more rows not shown." in html
