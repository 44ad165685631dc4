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
        ("loss:0", "loss:<wbr>0"),
        ("keep_origin_dtype", "keep_origin_dtype"),
        ("tower_0/attention/key/bias", "tower_0/<wbr>attention/<wbr>key/<wbr>bias"),
        ("sparse_softmax_cross_entropy_loss/value:0",
         "sparse_<wbr>softmax_<wbr>cross_<wbr>entropy_<wbr>loss/<wbr>value:<wbr>0"),
        ("a<b>/c&d", "a&lt;b&gt;/<wbr>c&amp;d"),
        ("", ""),
    ],
)  # fmt: skip
def test_breakable(text: str, expected: str) -> None:
    assert breakable(text) == expected


def test_name_columns_break_between_parts_and_numbers_stay_whole() -> None:
    html = name_table(["op", "cosine", "file"], [["a/b", 0.5, "x/y.npy"]], names=(0, 2))
    assert '<table class="names">' in html
    assert "<td>a/<wbr>b</td>" in html and "<td>x/<wbr>y.<wbr>npy</td>" in html
    assert '<td class="n">0.5</td>' in html


def test_rows_get_their_class() -> None:
    html = name_table(["op"], [["a"], ["b"]], row_class=["first", ""])
    assert '<tr class="first"><td>a</td></tr>' in html and "<tr><td>b</td></tr>" in html


def test_no_rows_and_too_many_rows() -> None:
    assert name_table(["op"], []) == '<p class="note">none</p>'
    html = name_table(["op"], [[str(i)] for i in range(ROWS_SHOWN + 3)])
    assert html.count("<tr>") == ROWS_SHOWN + 1 and "3 more rows not shown." in html
