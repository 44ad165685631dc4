from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest

import tf2npu.migrate.report as report_package
from tf2npu.atomic import atomic_path
from tf2npu.errors import UsageError
from tf2npu.migrate.model import MigrationReport
from tf2npu.migrate.report import FORMATS, write_reports
from tf2npu.migrate.report.summary_md import render_summary_md

ALL_FILES = [
    "summary.md",
    "changes.csv",
    "findings.csv",
    "api_analysis.csv",
    "report.json",
    "api_analysis.xlsx",
]


def test_formats() -> None:
    assert FORMATS == ("md", "csv", "json", "xlsx")


def test_writes_every_format_into_a_new_directory(report: MigrationReport, tmp_path: Path) -> None:
    directory = tmp_path / "a" / "report_npu"
    written = write_reports(report, directory, FORMATS)
    assert written == [directory / name for name in ALL_FILES]
    assert sorted(os.listdir(directory)) == sorted(ALL_FILES)
    assert (directory / "summary.md").read_text(encoding="utf-8") == render_summary_md(report)
    assert (
        json.loads((directory / "report.json").read_text(encoding="utf-8"))["totals"]["api_uses"]
        == 11
    )


def test_only_the_chosen_formats_in_fixed_order_once_each(
    report: MigrationReport, tmp_path: Path
) -> None:
    written = write_reports(report, tmp_path, ["json", "md", "json"])
    assert written == [tmp_path / "summary.md", tmp_path / "report.json"]
    assert sorted(os.listdir(tmp_path)) == ["report.json", "summary.md"]


def test_the_writers_run_with_the_cyclic_collector_paused(
    report: MigrationReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def writer(report: MigrationReport, directory: Path) -> list[Path]:
        seen.append(gc.isenabled())
        return []

    monkeypatch.setitem(report_package._WRITERS, "md", writer)
    assert gc.isenabled()
    write_reports(report, tmp_path, ["md"])
    assert seen == [False]
    assert gc.isenabled()  # on again once the set is written


def test_no_formats_writes_nothing(report: MigrationReport, tmp_path: Path) -> None:
    assert write_reports(report, tmp_path / "r", []) == []
    assert os.listdir(tmp_path / "r") == []


def test_unknown_format_is_a_usage_error_and_nothing_is_written(
    report: MigrationReport, tmp_path: Path
) -> None:
    directory = tmp_path / "r"
    with pytest.raises(UsageError) as caught:
        write_reports(report, directory, ["md", "pdf", "html"])
    assert str(caught.value) == (
        "unknown report format 'html', 'pdf'; valid formats are: md, csv, json, xlsx"
    )
    assert not directory.exists()


def test_rewriting_replaces_and_leaves_no_temp_files(
    report: MigrationReport, tmp_path: Path
) -> None:
    (tmp_path / "summary.md").write_text("old")
    write_reports(report, tmp_path, FORMATS)
    write_reports(report, tmp_path, FORMATS)
    assert sorted(os.listdir(tmp_path)) == sorted(ALL_FILES)
    assert (tmp_path / "summary.md").read_text(encoding="utf-8") == render_summary_md(report)


def test_a_failed_write_keeps_the_previous_file_and_no_temp_file(
    report: MigrationReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_reports(report, tmp_path, ["json"])
    before = (tmp_path / "report.json").read_bytes()

    def broken(path: Path, text: str) -> None:
        with atomic_path(path) as temp:
            temp.write_text(text[:10])
            raise OSError("disk full")

    monkeypatch.setattr(report_package, "write_text_atomic", broken)
    with pytest.raises(OSError, match="disk full"):
        write_reports(report, tmp_path, ["json"])
    assert (tmp_path / "report.json").read_bytes() == before
    assert os.listdir(tmp_path) == ["report.json"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_failed_rename_leaves_no_temp_file(
    report: MigrationReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    def refuse(src: object, dst: object) -> None:
        raise PermissionError(f"cannot replace {dst}")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError, match="cannot replace"):
        write_reports(report, tmp_path, [fmt])
    assert os.listdir(tmp_path) == []


def test_names_that_are_not_utf8_survive_every_format(
    report: MigrationReport, tmp_path: Path
) -> None:
    import csv
    import dataclasses

    from openpyxl import load_workbook

    name = os.fsdecode(b"src/caf\xe9.py")  # 'src/caf\udce9.py'
    index = next(i for i, f in enumerate(report.files) if f.path == "src/train.py")
    first = report.files[index]
    first = dataclasses.replace(
        first,
        path=name,
        changes=tuple(dataclasses.replace(c, path=name) for c in first.changes),
        findings=tuple(dataclasses.replace(f, path=name) for f in first.findings),
        api_uses=tuple(dataclasses.replace(u, path=name) for u in first.api_uses),
    )
    odd = dataclasses.replace(
        report, files=[*report.files[:index], first, *report.files[index + 1 :]]
    )
    write_reports(odd, tmp_path, FORMATS)
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert os.fsencode(data["files"][index]["path"]) == b"src/caf\xe9.py"
    assert "src/caf\\xe9.py:33:5" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    with open(tmp_path / "api_analysis.csv", encoding="utf-8") as stream:
        assert "src/caf\\xe9.py" in [row[1] for row in csv.reader(stream)]
    sheet = load_workbook(tmp_path / "api_analysis.xlsx")["api_analysis"]
    assert sheet.cell(row=2, column=2).value == "src/caf\\xe9.py"


def test_parse_formats() -> None:
    from tf2npu.migrate.report import parse_formats

    assert parse_formats(" md, json ") == ["md", "json"]
    with pytest.raises(UsageError, match="--format '' names no report format"):
        parse_formats("")
    with pytest.raises(UsageError, match="--format ' , ' names no report format"):
        parse_formats(" , ")
    with pytest.raises(UsageError, match="unknown report format 'foo'"):
        parse_formats("md,foo")
