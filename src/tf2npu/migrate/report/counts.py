"""Figures every report shows, computed once from a :class:`MigrationReport`.

Every renderer takes its numbers from here, so the Markdown, terminal, JSON and XLSX views of
one run always agree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tf2npu.migrate.model import ApiStatus, FileStatus, MigrationReport, Severity

SEVERITY_ORDER: tuple[Severity, ...] = (Severity.ERROR, Severity.WARNING, Severity.INFO)
"""Most severe first: the order reports list severities in."""


def status_counts(report: MigrationReport) -> tuple[dict[ApiStatus, int], dict[ApiStatus, int]]:
    """API uses per status: ``(raw, distinct)``.

    ``raw`` counts every use; ``distinct`` counts the distinct API names with that status (the
    vendor's "after eliminating duplicates"). Both have every :class:`ApiStatus` as a key, zero
    included, in the enum's order.
    """
    raw = dict.fromkeys(ApiStatus, 0)
    names: dict[ApiStatus, set[str]] = {status: set() for status in ApiStatus}
    for use in report.api_uses:
        raw[use.status] += 1
        names[use.status].add(use.api)
    return raw, {status: len(apis) for status, apis in names.items()}


def changes_by_rule(report: MigrationReport) -> dict[str, int]:
    """Number of changes per rule name, most changes first, ties by name."""
    counter = Counter(change.rule for change in report.changes)
    return dict(sorted(counter.items(), key=lambda item: (-item[1], item[0])))


def file_counts(report: MigrationReport) -> dict[FileStatus, int]:
    """Number of files per :class:`FileStatus`, every status included, in the enum's order."""
    counts = dict.fromkeys(FileStatus, 0)
    for result in report.files:
        counts[result.status] += 1
    return counts


def finding_counts(report: MigrationReport) -> dict[Severity, int]:
    """Number of findings per :class:`Severity`, every severity included, most severe first."""
    counts = dict.fromkeys(SEVERITY_ORDER, 0)
    for finding in report.findings:
        counts[finding.severity] += 1
    return counts


@dataclass(frozen=True, slots=True)
class Counts:
    """All the figures of one report (see :func:`count`)."""

    files: dict[FileStatus, int]
    findings: dict[Severity, int]
    changes: int
    changes_by_rule: dict[str, int]
    api_uses: int
    """Number of API uses (the vendor's "Total API")."""
    distinct_apis: int
    """Number of distinct API names over all statuses."""
    status_raw: dict[ApiStatus, int]
    status_distinct: dict[ApiStatus, int]

    @property
    def total_files(self) -> int:
        return sum(self.files.values())


def count(report: MigrationReport) -> Counts:
    """Every figure of ``report``, in one value."""
    raw, distinct = status_counts(report)
    by_rule = changes_by_rule(report)
    return Counts(
        files=file_counts(report),
        findings=finding_counts(report),
        changes=sum(by_rule.values()),
        changes_by_rule=by_rule,
        api_uses=sum(raw.values()),
        distinct_apis=len({use.api for use in report.api_uses}),
        status_raw=raw,
        status_distinct=distinct,
    )
