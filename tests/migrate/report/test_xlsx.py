from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import openpyxl

from tf2npu.migrate.model import ApiStatus, ApiUse, FileResult, FileStatus, MigrationReport
from tf2npu.migrate.report.xlsx import write_xlsx

ROWS = [
    ("index", "file", "line", "module", "api", "status", "advice"),
    (1, "src/train.py", 5, "tf.compat.v1", "tf.compat.v1.placeholder", "compat",
     "see tf.placeholder"),
    (2, "src/train.py", 6, "tf", "tf.placeholder", "supported", None),
    (3, "src/train.py", 8, "tf", "tf.placeholder", "supported", None),
    (4, "src/train.py", 12, "tf", "tf.Session", "training_after_migration",
     "config=npu_config_proto()"),
    (5, "src/train.py", 20, "tf.nn", "tf.nn.dropout", "migrated_by_tool", "npu_ops.dropout"),
    (6, "src/train.py", 25, "tf", "tf.py_func", "unsupported", "不支持: 移到主机"),
    (7, "src/train.py", 30, "tf", "tf.Session", "training_after_migration",
     "config=npu_config_proto()"),
    (8, "src/train.py", 33, "tf.distribute", "tf.distribute.MirroredStrategy", "unsupported",
     "use NPUStrategy"),
    (9, "src/train.py", 35, "tf.contrib.layers", "tf.contrib.layers.xavier_initializer",
     "deprecated", "tf.glorot_uniform_initializer"),
    (10, "src/utils.py", 3, "tf", "tf.placeholder", "supported", None),
    (11, "src/utils.py", 4, "tf.flags", "tf.flags.mystery", "not_listed", None),
]  # fmt: skip
"""The rows of ``api_analysis.csv``, as openpyxl reads them back (an empty cell is ``None``)."""

SUMMARY = [
    ("status", "label", "uses", "distinct_apis"),
    ("supported", "supported", 3, 1),
    ("migrated_by_tool", "supported after migration", 1, 1),
    ("training_after_migration", "training after migration", 2, 1),
    ("manual", "manual migration", 0, 0),
    ("unsupported", "unsupported", 2, 2),
    ("unsupported_harmless", "unsupported (harmless)", 0, 0),
    ("compat", "compat alias", 1, 1),
    ("deprecated", "deprecated", 1, 1),
    ("analysing", "analysing", 0, 0),
    ("not_listed", "not listed", 1, 1),
    ("host_python", "host Python", 0, 0),
    ("total", None, 11, 8),
]


def _read(path: Path) -> Any:
    return openpyxl.load_workbook(path)


FINDINGS = [
    ("file", "line", "rule", "severity", "message", "fix"),
    ("src/train.py", 33, "distribute", "error", 'MirroredStrategy has no NPU equivalent, "a|b"',
     "use NPUStrategy"),
    ("src/train.py", 25, "hazards", "warning", "tf.py_func runs on the host",
     "move it into the input pipeline"),
    ("src/utils.py", 2, "hazards", "warning", "tf.flags is global state", None),
    ("src/train.py", 7, "device_scope", "info", "tf.device('/gpu:0') is pinned to the CPU", None),
]  # fmt: skip
"""One row per finding, errors first, then warnings, then notes (each in report order)."""


def test_findings_sheet_lists_every_finding_worst_first(
    report: MigrationReport, tmp_path: Path
) -> None:
    path = tmp_path / "api_analysis.xlsx"
    write_xlsx(report, path)
    sheet = _read(path)["findings"]
    assert list(sheet.iter_rows(values_only=True)) == FINDINGS
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == "A1:F5"


def test_findings_sheet_of_a_report_without_findings(tmp_path: Path) -> None:
    empty = MigrationReport("in", "out", [FileResult("a.py", FileStatus.UNCHANGED, 3)])
    path = tmp_path / "a.xlsx"
    write_xlsx(empty, path)
    rows = list(_read(path)["findings"].iter_rows(values_only=True))
    assert rows == [FINDINGS[0]]


def test_sheets_and_rows(report: MigrationReport, tmp_path: Path) -> None:
    path = tmp_path / "api_analysis.xlsx"
    write_xlsx(report, path)
    book = _read(path)
    assert book.sheetnames == ["api_analysis", "findings", "summary"]
    assert list(book["api_analysis"].iter_rows(values_only=True)) == ROWS
    assert list(book["summary"].iter_rows(values_only=True)) == SUMMARY
    assert os.listdir(tmp_path) == ["api_analysis.xlsx"]


def test_header_is_bold_frozen_and_filtered(report: MigrationReport, tmp_path: Path) -> None:
    path = tmp_path / "a.xlsx"
    write_xlsx(report, path)
    sheet = _read(path)["api_analysis"]
    assert all(cell.font.bold for cell in sheet[1])
    assert not sheet["A2"].font.bold
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == "A1:G12"
    assert _read(path)["summary"].freeze_panes == "A2"


def test_column_widths_follow_the_content(report: MigrationReport, tmp_path: Path) -> None:
    path = tmp_path / "a.xlsx"
    write_xlsx(report, path)
    widths = {k: v.width for k, v in _read(path)["api_analysis"].column_dimensions.items()}
    # index: header (5) + 2, at least 6; api: the longest name (36) + 2.
    assert widths["A"] == 7
    assert widths["E"] == 38
    assert all(6 <= w <= 60 for w in widths.values())


def test_text_stays_text(tmp_path: Path) -> None:
    uses = (
        ApiUse("a.py", 1, 1, "tf", "tf.x", ApiStatus.MANUAL, "=1+1"),
        ApiUse("a.py", 2, 1, "tf", "tf.y", ApiStatus.MANUAL, "bell\x07 and tab\tok"),
    )
    report = MigrationReport("in", "out", files=[FileResult("a.py", FileStatus.MIGRATED,
                                                            api_uses=uses)])  # fmt: skip
    path = tmp_path / "a.xlsx"
    write_xlsx(report, path)
    sheet = _read(path)["api_analysis"]
    assert sheet["G2"].value == "=1+1"
    assert sheet["G2"].data_type == "s"
    assert sheet["G3"].value == "bell\ufffd and tab\tok"


def test_empty_report(tmp_path: Path) -> None:
    path = tmp_path / "a.xlsx"
    write_xlsx(MigrationReport("in", "out"), path)
    book = _read(path)
    assert list(book["api_analysis"].iter_rows(values_only=True)) == [ROWS[0]]
    assert list(book["summary"].iter_rows(values_only=True))[-1] == ("total", None, 0, 0)


def test_cells_are_cleaned_once_per_distinct_text() -> None:
    from tf2npu.migrate.report import xlsx

    rows = [("a\x01b.py", 3, None, "ok"), ("a\x01b.py", 4.5, "ok", "x")]
    assert xlsx._values(rows) == [("a\ufffdb.py", 3, None, "ok"), ("a\ufffdb.py", 4.5, "ok", "x")]


def test_widths_are_the_longest_text_per_column_within_bounds() -> None:
    from tf2npu.migrate.report import xlsx

    rows = [("abcdefghij", 1234567, None), ("a", 1, "z" * 80), ("ab",)]
    # 10 + 2; the header "n" (6 at least); 60 at most; a short row counts as empty cells.
    assert xlsx._widths(("file", "n", "msg"), rows) == [12, 9, 60]
