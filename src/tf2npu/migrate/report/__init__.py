"""The report set of a migration: views of one :class:`~tf2npu.migrate.model.MigrationReport`.

====================  ======  =====================================================
file                  format  module
====================  ======  =====================================================
``summary.md``        md      :mod:`~tf2npu.migrate.report.summary_md`
``changes.csv``,      csv     :mod:`~tf2npu.migrate.report.csv_files`
``findings.csv``,
``api_analysis.csv``
``report.json``       json    :mod:`~tf2npu.migrate.report.json_report`
``api_analysis.xlsx`` xlsx    :mod:`~tf2npu.migrate.report.xlsx`
====================  ======  =====================================================

The terminal summary is :func:`~tf2npu.migrate.report.terminal.print_summary`. Every file is
written atomically (a temporary file in the same directory, then :func:`os.replace`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from tf2npu.atomic import write_text_atomic
from tf2npu.errors import UsageError
from tf2npu.gcpause import gc_paused
from tf2npu.migrate.model import MigrationReport
from tf2npu.migrate.report.csv_files import write_csv
from tf2npu.migrate.report.json_report import REPORT_JSON, render_json
from tf2npu.migrate.report.plain import visible
from tf2npu.migrate.report.summary_md import SUMMARY_MD, render_summary_md
from tf2npu.migrate.report.xlsx import API_ANALYSIS_XLSX, write_xlsx

FORMATS: tuple[str, ...] = ("md", "csv", "json", "xlsx")
"""The report formats, in the order they are written."""


def parse_formats(text: str) -> list[str]:
    """The formats of a ``--format`` value (``"md,csv"``), checked.

    Raises:
        UsageError: the value names no format, or an unknown one.
    """
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    if not chosen:
        raise UsageError(
            f"--format {text!r} names no report format; give one or more of "
            f"{','.join(FORMATS)} separated by commas"
        )
    _check_formats(chosen)
    return chosen


def _check_formats(chosen: Iterable[str]) -> None:
    unknown = sorted(set(chosen).difference(FORMATS))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise UsageError(f"unknown report format {names}; valid formats are: {', '.join(FORMATS)}")


def write_reports(report: MigrationReport, directory: Path, formats: Iterable[str]) -> list[Path]:
    """Write ``formats`` of ``report`` into ``directory`` (created if missing).

    Formats are checked before anything is written, and each is written once, in the order of
    :data:`FORMATS`. Returns the written paths in that order.

    The cyclic collector is paused (:mod:`tf2npu.gcpause`): the writers build many short-lived
    strings and rows and no cycles, and a full collection in the middle of them rescanned the
    whole report (7 ms of the 80 ms the set takes on the benchmark corpus).

    Raises:
        UsageError: a format is not one of :data:`FORMATS`.
    """
    chosen = set(formats)
    _check_formats(chosen)
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with gc_paused():
        for name in (f for f in FORMATS if f in chosen):
            written += _WRITERS[name](report, directory)
    return written


def _md(report: MigrationReport, directory: Path) -> list[Path]:
    path = directory / SUMMARY_MD
    write_text_atomic(path, visible(render_summary_md(report)))
    return [path]


def _json(report: MigrationReport, directory: Path) -> list[Path]:
    path = directory / REPORT_JSON
    write_text_atomic(path, render_json(report))
    return [path]


def _xlsx(report: MigrationReport, directory: Path) -> list[Path]:
    path = directory / API_ANALYSIS_XLSX
    write_xlsx(report, path)
    return [path]


_WRITERS: dict[str, Callable[[MigrationReport, Path], list[Path]]] = {
    "md": _md,
    "csv": write_csv,
    "json": _json,
    "xlsx": _xlsx,
}
