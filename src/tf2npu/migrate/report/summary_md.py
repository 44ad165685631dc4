"""``summary.md``: the run at a glance, for people (and for pasting into a merge request).

Sections: the run (source, output, options, time), files per status with the failed files and
their reasons, changes per rule, API uses per support status (every use and distinct API names,
like the vendor's ``api_brief_report.txt``), and the first errors and warnings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import tf2npu
from tf2npu.migrate.model import FileStatus, MigrationReport
from tf2npu.migrate.report.counts import Counts, count
from tf2npu.migrate.report.labels import STATUS_LABELS, counted, severity_count
from tf2npu.migrate.report.plain import option_text
from tf2npu.migrate.report.ranking import top_findings

SUMMARY_MD = "summary.md"

FINDINGS_SHOWN = 20
"""How many errors and warnings the summary lists."""


def render_summary_md(report: MigrationReport) -> str:
    """The Markdown summary of ``report`` (GitHub-flavoured tables), ending with a newline."""
    counts = count(report)
    sections = [
        _run(report),
        _files(report, counts),
        _changes(counts),
        _apis(counts),
        _findings(report, counts),
    ]
    return "\n\n".join(sections) + "\n"


def _run(report: MigrationReport) -> str:
    options = ", ".join(
        _code(f"{name}={option_text(value)}") for name, value in sorted(report.options.items())
    )
    return "\n".join(
        [
            "# tf2npu migration report",
            "",
            f"- Source: {_code(report.source)}",
            f"- Output: {_code(report.output)}",
            f"- Options: {options or 'none'}",
            f"- Time: {report.seconds:.2f} s",
            f"- Tool: tf2npu {tf2npu.__version__}",
        ]
    )


def _files(report: MigrationReport, counts: Counts) -> str:
    rows = [[status.value, str(n)] for status, n in counts.files.items()]
    rows.append(["**total**", f"**{counts.total_files}**"])
    parts = ["## Files", _table(["Status", "Files"], rows, numeric=(1,))]
    failed = [
        [_code(result.path), result.reason]
        for result in report.files
        if result.status is FileStatus.FAILED
    ]
    if failed:
        parts += ["### Failed files", _table(["File", "Reason"], failed)]
    return "\n\n".join(parts)


def _changes(counts: Counts) -> str:
    if not counts.changes:
        return "## Changes per rule\n\nNo file needed a change."
    rows = [[_code(rule), str(n)] for rule, n in counts.changes_by_rule.items()]
    rows.append(["**total**", f"**{counts.changes}**"])
    return "## Changes per rule\n\n" + _table(["Rule", "Changes"], rows, numeric=(1,))


def _apis(counts: Counts) -> str:
    lead = (
        f"In brief: {counted(counts.api_uses, 'API use')}, "
        f"{counted(counts.distinct_apis, 'distinct API')}."
    )
    rows = [
        [STATUS_LABELS[status], str(n), str(counts.status_distinct[status])]
        for status, n in counts.status_raw.items()
    ]
    rows.append(["**total**", f"**{counts.api_uses}**", f"**{counts.distinct_apis}**"])
    headers = ["Status", "Uses", "Distinct APIs"]
    return "\n\n".join(["## API analysis", lead, _table(headers, rows, numeric=(1, 2))])


def _findings(report: MigrationReport, counts: Counts) -> str:
    tally = ", ".join(severity_count(n, severity) for severity, n in counts.findings.items())
    parts = ["## Findings", f"{tally}."]
    shown, more = top_findings(report, FINDINGS_SHOWN)
    if not shown:
        parts.append("No errors or warnings.")
        return "\n\n".join(parts)
    rows = [
        [
            finding.severity.value,
            _code(f"{finding.path}:{finding.line}:{finding.col}"),
            _code(finding.rule),
            finding.message,
            finding.fix,
        ]
        for finding in shown
    ]
    parts.append(_table(["Severity", "Location", "Rule", "Message", "Fix"], rows))
    if more:
        parts.append(f"Showing the first {len(shown)} of {len(shown) + more} errors and warnings.")
    return "\n\n".join(parts)


def _table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: tuple[int, ...] = ()
) -> str:
    """A GFM table; columns whose index is in ``numeric`` are right-aligned."""
    rule = ["---:" if index in numeric else "---" for index in range(len(headers))]
    lines = [_row(headers), _row(rule)]
    lines += [_row([_cell(text) for text in row]) for row in rows]
    return "\n".join(lines)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _cell(text: str) -> str:
    """``text`` made safe for one table cell: pipes escaped, line breaks as ``<br>``."""
    return text.replace("|", "\\|").replace("\r\n", "<br>").replace("\n", "<br>")


def _code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it contains."""
    run = longest = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
