"""The summary ``tf2npu migrate`` prints: compact, fits 80 columns, plain text off a terminal.

File counts on one line, failed files with their reasons, changes per rule, API uses per status
(every use and distinct APIs), the first errors and warnings in their severity colours, and
where the full report set was written. All text is passed as :class:`rich.text.Text`, so
brackets in paths and messages are never read as markup.
"""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tf2npu.migrate.model import ApiStatus, FileStatus, Finding, MigrationReport, Severity
from tf2npu.migrate.report.counts import Counts, count
from tf2npu.migrate.report.labels import STATUS_LABELS, counted, severity_count
from tf2npu.migrate.report.plain import visible
from tf2npu.migrate.report.ranking import top_findings
from tf2npu.migrate.tables.hazards import APPLIED

HAZARDS_RULE = "hazards"

FINDINGS_SHOWN = 10
FAILED_SHOWN = 5

SEVERITY_STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
STATUS_STYLES = {
    ApiStatus.SUPPORTED: "green",
    ApiStatus.MIGRATED_BY_TOOL: "green",
    ApiStatus.TRAINING_AFTER_MIGRATION: "green",
    ApiStatus.MANUAL: "yellow",
    ApiStatus.UNSUPPORTED: "red",
    ApiStatus.DEPRECATED: "yellow",
    ApiStatus.ANALYSING: "yellow",
}

_PLAIN_BOX = box.Box(
    "    \n    \n -- \n    \n    \n -- \n    \n    \n",
    ascii=True,
)
"""Like ``box.SIMPLE``, in ASCII: what tables look like when the output is not a terminal."""


def print_summary(
    report: MigrationReport, console: Console, report_dir: Path | str | None = None
) -> None:
    """Print the summary of ``report`` to ``console``, and ``report_dir`` when given."""
    counts = count(report)
    table_box = box.SIMPLE if console.is_terminal else _PLAIN_BOX
    console.print(_headline(report))
    console.print(_totals(counts))
    _print_failed(report, console)
    if counts.changes_by_rule:
        console.print(_changes_table(counts, table_box))
    if counts.api_uses:
        console.print(_status_table(counts, table_box))
    _print_applied(report, console)
    _print_findings(report, console)
    if report_dir is not None:
        console.print(Text.assemble(("Reports: ", "bold"), str(report_dir)))


def _headline(report: MigrationReport) -> Text:
    return Text.assemble(
        ("tf2npu migrate", "bold"), f" {report.source} -> {report.output} ({report.seconds:.2f} s)"
    )


def _totals(counts: Counts) -> Text:
    files = [f"{counts.files[status]} {status.value}" for status in FileStatus]
    failed = counts.files[FileStatus.FAILED]
    text = Text(counted(counts.total_files, "file") + ": " + ", ".join(files[:-1]) + ", ")
    text.append(files[-1], style="bold red" if failed else "")
    text.append("\n" + counted(counts.changes, "change"))
    text.append(f", {counted(counts.api_uses, 'API use')} ({counts.distinct_apis} distinct)")
    text.append(", findings: ")
    for index, (severity, n) in enumerate(counts.findings.items()):
        if index:
            text.append(", ")
        text.append(severity_count(n, severity), style=SEVERITY_STYLES[severity] if n else "")
    return text


def _print_failed(report: MigrationReport, console: Console) -> None:
    failed = [f for f in report.files if f.status is FileStatus.FAILED]
    for result in failed[:FAILED_SHOWN]:
        path, reason = visible(result.path), visible(result.reason)
        line = Text.assemble(("failed ", "bold red"), (path, "bold"), f": {reason}")
        console.print(line)
    if len(failed) > FAILED_SHOWN:
        console.print(Text(f"... and {len(failed) - FAILED_SHOWN} more failed"))


def _table(table_box: box.Box) -> Table:
    return Table(box=table_box, show_edge=False, show_footer=True, footer_style="bold")


def _changes_table(counts: Counts, table_box: box.Box) -> Table:
    table = _table(table_box)
    table.add_column("Rule", footer="total", overflow="fold")
    table.add_column("Changes", footer=str(counts.changes), justify="right")
    for rule, n in counts.changes_by_rule.items():
        table.add_row(Text(rule), str(n))
    return table


def _status_table(counts: Counts, table_box: box.Box) -> Table:
    """Statuses with at least one use (the Markdown and XLSX reports list them all)."""
    table = _table(table_box)
    table.add_column("API status", footer="total")
    table.add_column("Uses", footer=str(counts.api_uses), justify="right")
    table.add_column("APIs", footer=str(counts.distinct_apis), justify="right")
    for status, n in counts.status_raw.items():
        if n:
            label = Text(STATUS_LABELS[status], style=STATUS_STYLES.get(status, ""))
            table.add_row(label, str(n), str(counts.status_distinct[status]))
    return table


def _print_applied(report: MigrationReport, console: Console) -> None:
    """The hazards the tool fixed itself (e.g. mixed compute for a pipeline lookup table): a
    decision the user must know of, shown whatever its severity."""
    applied = [f for f in report.findings if f.rule == HAZARDS_RULE and _hazard(f) in APPLIED]
    if not applied:
        return
    console.print(Text("Fixes applied", style="bold"))
    for finding in applied[:FINDINGS_SHOWN]:
        _print_finding(finding, console)
    if len(applied) > FINDINGS_SHOWN:
        console.print(Text(f"... and {len(applied) - FINDINGS_SHOWN} more (findings.csv)"))


def _hazard(finding: Finding) -> str:
    """The hazard id a hazards finding's message starts with (``[id] ...``)."""
    head, _, _ = finding.message.partition("] ")
    return head[1:] if head.startswith("[") else ""


def _print_findings(report: MigrationReport, console: Console) -> None:
    shown, more = top_findings(report, FINDINGS_SHOWN)
    if not shown:
        return
    heading = "Errors and warnings"
    if more:
        heading += f" (first {len(shown)} of {len(shown) + more})"
    console.print(Text(heading, style="bold"))
    for finding in shown:
        _print_finding(finding, console)


def _print_finding(finding: Finding, console: Console) -> None:
    # One header line, then message and fix indented under it at the full width: long hazard
    # messages stay readable on an 80-column terminal.
    head = Text(f"{finding.severity.value:<8}", style=SEVERITY_STYLES[finding.severity])
    head.append(f"{visible(finding.path)}:{finding.line}:{finding.col}")
    head.append(f" [{finding.rule}]", style="dim")
    console.print(head)
    body = Text(visible(finding.message))
    if finding.fix:
        body.append(f"\nfix: {finding.fix}", style="dim")
    console.print(Padding(body, (0, 0, 0, 8)))
