from __future__ import annotations

import dataclasses

from tf2npu.migrate.model import FileResult, FileStatus, Finding, MigrationReport, Severity
from tf2npu.migrate.report.summary_md import render_summary_md

EXPECTED = """\
# tf2npu migration report

- Source: `/data/model`
- Output: `/data/model_npu`
- Options: `distributed=auto`, `entry=src/train.py`, `loss_scale=none`, `mix_compile=false`, \
`precision_mode=null`
- Time: 1.23 s
- Tool: tf2npu 0.1.0

## Files

| Status | Files |
| --- | ---: |
| migrated | 1 |
| unchanged | 1 |
| copied | 1 |
| failed | 1 |
| **total** | **4** |

### Failed files

| File | Reason |
| --- | --- |
| `src/broken.py` | cannot parse: invalid syntax (line 3, col 5) |

## Changes per rule

| Rule | Changes |
| --- | ---: |
| `session_config` | 2 |
| `dropout` | 1 |
| `npu_import` | 1 |
| **total** | **4** |

## API analysis

In brief: 11 API uses, 8 distinct APIs.

| Status | Uses | Distinct APIs |
| --- | ---: | ---: |
| supported | 3 | 1 |
| supported after migration | 1 | 1 |
| training after migration | 2 | 1 |
| manual migration | 0 | 0 |
| unsupported | 2 | 2 |
| unsupported (harmless) | 0 | 0 |
| compat alias | 1 | 1 |
| deprecated | 1 | 1 |
| analysing | 0 | 0 |
| not listed | 1 | 1 |
| host Python | 0 | 0 |
| **total** | **11** | **8** |

## Findings

1 error, 2 warnings, 1 info.

| Severity | Location | Rule | Message | Fix |
| --- | --- | --- | --- | --- |
| error | `src/train.py:33:5` | `distribute` | MirroredStrategy has no NPU equivalent, "a\\|b" | \
use NPUStrategy |
| warning | `src/train.py:25:3` | `hazards` | tf.py_func runs on the host | \
move it into the input pipeline |
| warning | `src/utils.py:2:1` | `hazards` | tf.flags is global state |  |
"""


def test_whole_document(report: MigrationReport) -> None:
    assert render_summary_md(report) == EXPECTED


def test_empty_report() -> None:
    text = render_summary_md(MigrationReport("in", "out"))
    assert "- Options: none\n" in text
    assert "| **total** | **0** |\n" in text
    assert "### Failed files" not in text
    assert "## Changes per rule\n\nNo file needed a change.\n" in text
    assert "In brief: 0 API uses, 0 distinct APIs." in text
    assert "0 errors, 0 warnings, 0 info.\n\nNo errors or warnings.\n" in text
    assert text.endswith("No errors or warnings.\n")


def test_at_most_twenty_findings_and_how_many_in_all() -> None:
    findings = tuple(
        Finding("a.py", line, 1, "hazards", Severity.WARNING, f"w{line}") for line in range(1, 26)
    )
    result = FileResult("a.py", FileStatus.UNCHANGED, findings=findings)
    text = render_summary_md(MigrationReport("in", "out", files=[result]))
    assert text.count("| warning | `a.py:") == 20
    assert "| warning | `a.py:20:1` | `hazards` | w20 |  |\n" in text
    assert "`a.py:21:1`" not in text
    assert text.endswith("\n\nShowing the first 20 of 25 errors and warnings.\n")


def test_info_findings_are_counted_not_listed() -> None:
    info = Finding("a.py", 1, 1, "device_scope", Severity.INFO, "note")
    result = FileResult("a.py", FileStatus.UNCHANGED, findings=(info,))
    text = render_summary_md(MigrationReport("in", "out", files=[result]))
    assert "0 errors, 0 warnings, 1 info.\n\nNo errors or warnings.\n" in text
    assert "note" not in text


def test_cells_keep_one_line_and_pipes_and_backticks_are_safe(report: MigrationReport) -> None:
    failed = FileResult("odd`name|.py", FileStatus.FAILED, reason="line 1\nline 2 | x")
    text = render_summary_md(dataclasses.replace(report, files=[failed]))
    assert "| ``odd`name\\|.py`` | line 1<br>line 2 \\| x |\n" in text


def test_options_of_any_type(report: MigrationReport) -> None:
    report = dataclasses.replace(report, options={"dump": ["a", "b"], "n": 3, "on": True})
    assert '- Options: `dump=["a", "b"]`, `n=3`, `on=true`\n' in render_summary_md(report)
