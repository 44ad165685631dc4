from __future__ import annotations

from tf2npu.migrate.model import FileResult, FileStatus, Finding, MigrationReport, Severity
from tf2npu.migrate.report.ranking import top_findings


def _where(findings: list[Finding]) -> list[str]:
    return [f"{f.severity.value} {f.path}:{f.line}:{f.col}" for f in findings]


def test_errors_first_then_warnings_in_report_order(report: MigrationReport) -> None:
    shown, more = top_findings(report, 20)
    assert _where(shown) == [
        "error src/train.py:33:5",
        "warning src/train.py:25:3",
        "warning src/utils.py:2:1",
    ]
    assert more == 0


def test_limit_and_how_many_more(report: MigrationReport) -> None:
    shown, more = top_findings(report, 1)
    assert _where(shown) == ["error src/train.py:33:5"]
    assert more == 2
    assert top_findings(report, 0) == ([], 3)


def test_info_only_when_asked(report: MigrationReport) -> None:
    shown, more = top_findings(report, 20, least=Severity.INFO)
    assert _where(shown)[-1] == "info src/train.py:7:1"
    assert more == 0


def test_lines_are_sorted_within_a_file_but_files_keep_report_order() -> None:
    def warning(path: str, line: int, col: int) -> Finding:
        return Finding(path, line, col, "hazards", Severity.WARNING, "m")

    files = [
        FileResult("b.py", FileStatus.UNCHANGED, findings=(warning("b.py", 9, 1),)),
        FileResult(
            "a.py",
            FileStatus.UNCHANGED,
            findings=(warning("a.py", 5, 2), warning("a.py", 1, 1), warning("a.py", 5, 1)),
        ),
    ]
    shown, _ = top_findings(MigrationReport("in", "out", files=files), 10)
    assert _where(shown) == [
        "warning b.py:9:1",
        "warning a.py:1:1",
        "warning a.py:5:1",
        "warning a.py:5:2",
    ]
