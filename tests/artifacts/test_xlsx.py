"""The minimal .xlsx writer: literal sheet XML, and what openpyxl reads back."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

from tf2npu.artifacts.xlsx import (
    Sheet,
    Value,
    column_letter,
    escape,
    sheet_xml,
    write_workbook,
)


@pytest.mark.parametrize(("index", "letters"), [(1, "A"), (7, "G"), (26, "Z"), (27, "AA"),
                                                (702, "ZZ"), (703, "AAA")])  # fmt: skip
def test_column_letter(index: int, letters: str) -> None:
    assert column_letter(index) == letters


def test_column_letter_of_zero_is_an_error() -> None:
    with pytest.raises(ValueError, match="column index 0: columns are numbered from 1"):
        column_letter(0)


def test_sheet_xml_cells() -> None:
    xml = sheet_xml(Sheet("s", [("name", "n"), ("a<b & c", 3), ("", None), (True, 1.5)], [7, 6]))
    body = xml[xml.index("<cols>") :]
    assert body == (
        '<cols><col min="1" max="1" width="7" customWidth="1"/>'
        '<col min="2" max="2" width="6" customWidth="1"/></cols><sheetData>'
        '<row r="1"><c r="A1" s="1" t="inlineStr"><is><t xml:space="preserve">name</t></is></c>'
        '<c r="B1" s="1" t="inlineStr"><is><t xml:space="preserve">n</t></is></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><t xml:space="preserve">a&lt;b &amp; c</t>'
        '</is></c><c r="B2"><v>3</v></c></row>'
        '<row r="3"><c r="A3" t="inlineStr"/></row>'
        '<row r="4"><c r="A4" t="b"><v>1</v></c><c r="B4"><v>1.5</v></c></row>'
        '</sheetData><autoFilter ref="A1:B4"/></worksheet>'
    )


def test_openpyxl_reads_the_workbook(tmp_path: Path) -> None:
    path = tmp_path / "a.xlsx"
    rows: list[tuple[Value, ...]] = [
        ("file", "line", "advice"),
        ("a.py", 5, "=1+1"),
        ("b.py", 6, None),
        ("c", 7, ""),
    ]
    write_workbook(path, [Sheet("data", rows, [8, 6, 10]), Sheet("more", [("x",)])])
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["data", "more"]
    sheet = book["data"]
    assert list(sheet.iter_rows(values_only=True)) == [
        ("file", "line", "advice"), ("a.py", 5, "=1+1"), ("b.py", 6, None), ("c", 7, None)
    ]  # fmt: skip
    assert sheet["C2"].data_type == "s"
    assert [c.font.bold for c in sheet[1]] == [True, True, True]
    assert not sheet["A2"].font.bold
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == "A1:C4"
    assert {k: v.width for k, v in sheet.column_dimensions.items()} == {"A": 8, "B": 6, "C": 10}
    assert book["more"]["A1"].value == "x"


def test_a_control_character_is_refused_with_its_cell(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"sheet 'data' cell B2: 'bell\\x07' holds a control"):
        write_workbook(tmp_path / "a.xlsx", [Sheet("data", [("a", "b"), ("ok", "bell\x07")])])


def test_a_value_of_another_type_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"sheet 'data' cell A2: PosixPath PosixPath\('x'\) is not"):
        rows = [("a",), (Path("x"),)]
        write_workbook(tmp_path / "a.xlsx", [Sheet("data", rows)])  # type: ignore[arg-type]


def test_a_workbook_needs_sheets_with_distinct_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a workbook needs at least one sheet"):
        write_workbook(tmp_path / "a.xlsx", [])
    with pytest.raises(ValueError, match=r"sheet names \['s', 's'\] repeat"):
        write_workbook(tmp_path / "a.xlsx", [Sheet("s", [("a",)]), Sheet("s", [("b",)])])


def test_escape() -> None:
    assert escape('a<b & "c">') == 'a&lt;b &amp; "c"&gt;'
    assert escape('a<b & "c">', quote=True) == "a&lt;b &amp; &quot;c&quot;&gt;"


def test_a_sheet_name_with_xml_characters_reads_back(tmp_path: Path) -> None:
    write_workbook(tmp_path / "a.xlsx", [Sheet('a&"b"', [("x",)])])
    assert openpyxl.load_workbook(tmp_path / "a.xlsx").sheetnames == ['a&"b"']
