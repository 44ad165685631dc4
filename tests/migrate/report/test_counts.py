from __future__ import annotations

from tf2npu.migrate.model import ApiStatus, FileStatus, MigrationReport, Severity
from tf2npu.migrate.report.counts import (
    changes_by_rule,
    count,
    file_counts,
    finding_counts,
    status_counts,
)

RAW = {
    ApiStatus.SUPPORTED: 3,
    ApiStatus.MIGRATED_BY_TOOL: 1,
    ApiStatus.TRAINING_AFTER_MIGRATION: 2,
    ApiStatus.MANUAL: 0,
    ApiStatus.UNSUPPORTED: 2,
    ApiStatus.UNSUPPORTED_HARMLESS: 0,
    ApiStatus.COMPAT: 1,
    ApiStatus.DEPRECATED: 1,
    ApiStatus.ANALYSING: 0,
    ApiStatus.NOT_LISTED: 1,
    ApiStatus.HOST_PYTHON: 0,
}
DISTINCT = {
    ApiStatus.SUPPORTED: 1,
    ApiStatus.MIGRATED_BY_TOOL: 1,
    ApiStatus.TRAINING_AFTER_MIGRATION: 1,
    ApiStatus.MANUAL: 0,
    ApiStatus.UNSUPPORTED: 2,
    ApiStatus.UNSUPPORTED_HARMLESS: 0,
    ApiStatus.COMPAT: 1,
    ApiStatus.DEPRECATED: 1,
    ApiStatus.ANALYSING: 0,
    ApiStatus.NOT_LISTED: 1,
    ApiStatus.HOST_PYTHON: 0,
}


def test_status_counts_raw_and_distinct(report: MigrationReport) -> None:
    raw, distinct = status_counts(report)
    assert raw == RAW
    assert distinct == DISTINCT
    assert list(raw) == list(ApiStatus)
    assert list(distinct) == list(ApiStatus)


def test_status_counts_of_an_empty_report_are_all_zero() -> None:
    raw, distinct = status_counts(MigrationReport("in", "out"))
    assert raw == dict.fromkeys(ApiStatus, 0)
    assert distinct == dict.fromkeys(ApiStatus, 0)


def test_changes_by_rule_most_first_then_by_name(report: MigrationReport) -> None:
    assert list(changes_by_rule(report).items()) == [
        ("session_config", 2),
        ("dropout", 1),
        ("npu_import", 1),
    ]


def test_file_and_finding_counts(report: MigrationReport) -> None:
    assert file_counts(report) == {
        FileStatus.MIGRATED: 1,
        FileStatus.UNCHANGED: 1,
        FileStatus.COPIED: 1,
        FileStatus.FAILED: 1,
    }
    assert list(finding_counts(report).items()) == [
        (Severity.ERROR, 1),
        (Severity.WARNING, 2),
        (Severity.INFO, 1),
    ]


def test_count_gathers_everything(report: MigrationReport) -> None:
    counts = count(report)
    assert counts.total_files == 4
    assert counts.changes == 4
    assert counts.api_uses == 11
    assert counts.distinct_apis == 8
    assert counts.status_raw == RAW
    assert counts.status_distinct == DISTINCT
    assert counts.changes_by_rule == {"session_config": 2, "dropout": 1, "npu_import": 1}
    assert counts.findings == {Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 1}
