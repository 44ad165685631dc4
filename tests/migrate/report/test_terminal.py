from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from tf2npu.migrate.model import FileResult, FileStatus, Finding, MigrationReport, Severity
from tf2npu.migrate.report.terminal import print_summary


def _plain(report: MigrationReport, report_dir: str | None = None) -> str:
    console = Console(record=True, width=80, file=io.StringIO())
    print_summary(report, console, report_dir=report_dir)
    return console.export_text()


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def test_counts_and_tables(report: MigrationReport) -> None:
    lines = _lines(_plain(report, report_dir="/data/report_npu"))
    assert lines[:4] == [
        "tf2npu migrate /data/model -> /data/model_npu (1.23 s)",
        "4 files: 1 migrated, 1 unchanged, 1 copied, 1 failed",
        "4 changes, 11 API uses (8 distinct), findings: 1 error, 2 warnings, 1 info",
        "failed src/broken.py: cannot parse: invalid syntax (line 3, col 5)",
    ]
    assert lines[4:11] == [
        " Rule             Changes",
        "--------------------------",
        " session_config         2",
        " dropout                1",
        " npu_import             1",
        "--------------------------",
        " total                  4",
    ]
    assert lines[11:21] == [
        " API status                  Uses   APIs",
        "-----------------------------------------",
        " supported                      3      1",
        " supported after migration      1      1",
        " training after migration       2      1",
        " unsupported                    2      2",
        " compat alias                   1      1",
        " deprecated                     1      1",
        " not listed                     1      1",
        "-----------------------------------------",
    ]
    assert lines[21] == " total                         11      8"
    assert lines[-1] == "Reports: /data/report_npu"


def test_findings(report: MigrationReport) -> None:
    lines = _lines(_plain(report))
    start = lines.index("Errors and warnings")
    assert lines[start + 1 :] == [
        "error   src/train.py:33:5 [distribute]",
        '        MirroredStrategy has no NPU equivalent, "a|b"',
        "        fix: use NPUStrategy",
        "warning src/train.py:25:3 [hazards]",
        "        tf.py_func runs on the host",
        "        fix: move it into the input pipeline",
        "warning src/utils.py:2:1 [hazards]",
        "        tf.flags is global state",
    ]


def test_fits_80_columns_and_is_plain_text_off_a_terminal(report: MigrationReport) -> None:
    stream = io.StringIO()
    print_summary(report, Console(width=80, file=stream), report_dir="/r")
    text = stream.getvalue()
    assert "\x1b[" not in text
    assert text.isascii()
    assert max(len(line) for line in text.splitlines()) <= 80


def test_colours_on_a_terminal(report: MigrationReport) -> None:
    stream = io.StringIO()
    console = Console(width=80, file=stream, force_terminal=True, color_system="standard")
    print_summary(report, console)
    text = stream.getvalue()
    assert "\x1b[1;31merror" in text
    assert "\x1b[33mwarning" in text
    assert "─" in text


def test_at_most_ten_findings_and_markup_is_text() -> None:
    findings = tuple(
        Finding("a.py", n, 1, "hazards", Severity.ERROR, f"[bold]x{n}[/bold]") for n in range(12)
    )
    result = FileResult("a.py", FileStatus.UNCHANGED, findings=findings)
    text = _plain(MigrationReport("in", "out", files=[result]))
    assert "Errors and warnings (first 10 of 12)" in text
    assert "[bold]x9[/bold]" in text
    assert "x10" not in text


def test_nothing_to_show() -> None:
    assert _lines(_plain(MigrationReport("in", "out", seconds=0.5))) == [
        "tf2npu migrate in -> out (0.50 s)",
        "0 files: 0 migrated, 0 unchanged, 0 copied, 0 failed",
        "0 changes, 0 API uses (0 distinct), findings: 0 errors, 0 warnings, 0 info",
    ]


def test_failed_files_are_capped(report: MigrationReport) -> None:
    failed = [FileResult(f"f{n}.py", FileStatus.FAILED, reason="bad") for n in range(7)]
    lines = _lines(_plain(dataclasses.replace(report, files=failed)))
    assert lines[3:9] == [
        "failed f0.py: bad",
        "failed f1.py: bad",
        "failed f2.py: bad",
        "failed f3.py: bad",
        "failed f4.py: bad",
        "... and 2 more failed",
    ]


def test_fixes_the_tool_applied_are_shown_whatever_their_severity() -> None:
    message = (
        "[mix_compile_enabled] lookup table `table` (tf.lookup.StaticHashTable, line 2) is used "
        "in the input pipeline: tf2npu turned mixed compute on"
    )
    applied = Finding("t.py", 4, 23, "hazards", Severity.INFO, message, "nothing to do")
    other = Finding("t.py", 9, 1, "hazards", Severity.INFO, "[queue_input] queues", "port it")
    result = FileResult("t.py", FileStatus.MIGRATED, 9, findings=(applied, other))
    lines = _lines(_plain(MigrationReport("in", "out", [result])))
    start = lines.index("Fixes applied")
    assert lines[start:] == [
        "Fixes applied",
        "info    t.py:4:23 [hazards]",
        "        [mix_compile_enabled] lookup table `table` (tf.lookup.StaticHashTable,",
        "        line 2) is used in the input pipeline: tf2npu turned mixed compute on",
        "        fix: nothing to do",
    ]
