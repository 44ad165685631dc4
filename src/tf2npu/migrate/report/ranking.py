"""Which findings a summary shows first: errors, then warnings, each in report order."""

from __future__ import annotations

from tf2npu.migrate.model import Finding, MigrationReport, Severity


def top_findings(
    report: MigrationReport, limit: int, *, least: Severity = Severity.WARNING
) -> tuple[list[Finding], int]:
    """The first ``limit`` findings at ``least`` severity or above, and how many were left off.

    Findings are ordered by severity (errors first), then by file (report order), line and
    column.
    """
    ranked = sorted(
        (
            (-finding.severity.rank, index, finding.line, finding.col, finding)
            for index, result in enumerate(report.files)
            for finding in result.findings
            if finding.severity.rank >= least.rank
        ),
        key=lambda item: item[:4],
    )
    shown = [item[4] for item in ranked[: max(limit, 0)]]
    return shown, len(ranked) - len(shown)
