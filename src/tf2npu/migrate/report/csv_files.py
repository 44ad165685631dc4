"""``changes.csv``, ``findings.csv`` and ``api_analysis.csv``: one row per record, for tools.

Plain UTF-8 (no BOM), a header row, the :mod:`csv` module's minimal quoting and ``\\n`` line
endings (a byte of a file name that is not UTF-8 is written ``\\xff``). Enum columns hold the
stable enum values (``error``, ``migrated_by_tool``, ...). Rows are in report order: files in
input order, records in the order the file result holds them.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path

from tf2npu.atomic import atomic_path
from tf2npu.migrate.model import MigrationReport
from tf2npu.migrate.report.plain import visible

CHANGES_CSV = "changes.csv"
FINDINGS_CSV = "findings.csv"
API_ANALYSIS_CSV = "api_analysis.csv"

CHANGES_COLUMNS = ("file", "line", "col", "rule", "before", "after")
FINDINGS_COLUMNS = ("file", "line", "col", "severity", "rule", "message", "fix")
API_COLUMNS = ("index", "file", "line", "module", "api", "status", "advice")
"""The columns of ``api_analysis.csv`` (and of the XLSX sheet): the vendor's, in English."""


def write_csv(report: MigrationReport, directory: Path) -> list[Path]:
    """Write the three CSV files into the existing ``directory``; return their paths."""
    tables = {
        CHANGES_CSV: (CHANGES_COLUMNS, change_rows(report)),
        FINDINGS_CSV: (FINDINGS_COLUMNS, finding_rows(report)),
        API_ANALYSIS_CSV: (API_COLUMNS, api_rows(report)),
    }
    written = []
    for name, (columns, rows) in tables.items():
        path = directory / name
        _write_table(path, columns, rows)
        written.append(path)
    return written


def change_rows(report: MigrationReport) -> Iterable[tuple[object, ...]]:
    for c in report.changes:
        yield (c.path, c.line, c.col, c.rule, c.before, c.after)


def finding_rows(report: MigrationReport) -> Iterable[tuple[object, ...]]:
    for f in report.findings:
        yield (f.path, f.line, f.col, f.severity.value, f.rule, f.message, f.fix)


def api_rows(report: MigrationReport) -> Iterable[tuple[object, ...]]:
    """The rows of the API analysis (``index`` counts from 1), shared with the XLSX writer."""
    for index, u in enumerate(report.api_uses, 1):
        yield (index, u.path, u.line, u.module, u.api, u.status.value, u.advice)


def _write_table(path: Path, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    with atomic_path(path) as temp, open(temp, "w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([visible(v) if isinstance(v, str) else v for v in row])
