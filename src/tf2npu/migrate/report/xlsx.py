"""``api_analysis.xlsx``: the API analysis as a spreadsheet, like the vendor's report.

Sheet ``api_analysis`` has the columns of ``api_analysis.csv`` (bold, frozen header row, an auto
filter over the data, column widths from the content). Sheet ``findings`` has one row per
finding (file, line, rule, severity, message, fix), errors first, then warnings, then notes, each
in report order, so what must be fixed is never listed after a notice. Sheet ``summary`` has the
uses and distinct API names per status. The workbook is written in openpyxl's write-only (streaming)
mode, so tens of thousands of rows stay fast; openpyxl is imported only when a workbook is
written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tf2npu.atomic import atomic_path
from tf2npu.migrate.model import MigrationReport, Severity
from tf2npu.migrate.report.counts import count
from tf2npu.migrate.report.csv_files import API_COLUMNS, api_rows
from tf2npu.migrate.report.labels import STATUS_LABELS
from tf2npu.migrate.report.plain import visible
from tf2npu.migrate.report.ranking import top_findings

API_ANALYSIS_XLSX = "api_analysis.xlsx"
DATA_SHEET = "api_analysis"
FINDINGS_SHEET = "findings"
FINDINGS_SHEET_COLUMNS = ("file", "line", "rule", "severity", "message", "fix")
SUMMARY_SHEET = "summary"
SUMMARY_COLUMNS = ("status", "label", "uses", "distinct_apis")

_MIN_WIDTH = 6
_MAX_WIDTH = 60
_ILLEGAL = re.compile(r"[\000-\010\013\014\016-\037]")
"""Control characters a worksheet cannot hold (openpyxl refuses them)."""


def write_xlsx(report: MigrationReport, path: Path) -> None:
    """Write the workbook to ``path`` (atomically; the directory must exist)."""
    from openpyxl import Workbook

    workbook = Workbook(write_only=True)
    rows = [tuple(_value(v) for v in row) for row in api_rows(report)]
    _write_sheet(workbook.create_sheet(DATA_SHEET), API_COLUMNS, rows)
    findings = [tuple(_value(v) for v in row) for row in _finding_rows(report)]
    _write_sheet(workbook.create_sheet(FINDINGS_SHEET), FINDINGS_SHEET_COLUMNS, findings)
    _write_sheet(workbook.create_sheet(SUMMARY_SHEET), SUMMARY_COLUMNS, _summary_rows(report))
    with atomic_path(path) as temp:
        workbook.save(temp)


def _finding_rows(report: MigrationReport) -> list[tuple[object, ...]]:
    ranked, _ = top_findings(report, len(report.findings), least=Severity.INFO)
    return [(f.path, f.line, f.rule, f.severity.value, f.message, f.fix) for f in ranked]


def _summary_rows(report: MigrationReport) -> list[tuple[object, ...]]:
    counts = count(report)
    rows: list[tuple[object, ...]] = [
        (status.value, STATUS_LABELS[status], n, counts.status_distinct[status])
        for status, n in counts.status_raw.items()
    ]
    rows.append(("total", "", counts.api_uses, counts.distinct_apis))
    return rows


def _write_sheet(sheet: Any, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Header, widths, frozen header and filter, then the rows (in write-only order)."""
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    for index, width in enumerate(_widths(columns, rows), 1):
        sheet.column_dimensions[get_column_letter(index)].width = width
    sheet.freeze_panes = "A2"
    sheet.auto_filter.ref = f"A1:{get_column_letter(len(columns))}{len(rows) + 1}"
    bold = Font(bold=True)
    header = []
    for name in columns:
        cell = WriteOnlyCell(sheet, value=name)
        cell.font = bold
        header.append(cell)
    sheet.append(header)
    for row in rows:
        sheet.append([_cell(sheet, v) for v in row])


def _cell(sheet: Any, value: object) -> object:
    """``value``, or a cell that keeps a string starting with ``=`` as text, not a formula."""
    if isinstance(value, str) and value.startswith("="):
        from openpyxl.cell import WriteOnlyCell

        cell = WriteOnlyCell(sheet, value=value)
        cell.data_type = "s"
        return cell
    return value


def _value(value: object) -> object:
    if not isinstance(value, str):
        return value
    value = visible(value)  # a file name's non-UTF-8 bytes as \xff: XML cannot hold them
    return _ILLEGAL.sub("\ufffd", value) if _ILLEGAL.search(value) else value


def _widths(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[int]:
    longest = [len(name) for name in columns]
    for row in rows:
        for index, value in enumerate(row):
            longest[index] = max(longest[index], len(str(value)))
    return [min(max(n + 2, _MIN_WIDTH), _MAX_WIDTH) for n in longest]
