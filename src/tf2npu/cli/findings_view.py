"""Findings on the terminal: one block per finding, worst first, then a count line.

Every value is printed as :class:`rich.text.Text` (never markup): log lines and fixes hold
``[...]`` that rich would read as style tags.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from tf2npu.findings import Finding, Severity

__all__ = ["print_findings"]

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_LABEL_WIDTH = 8


def print_findings(
    findings: Sequence[Finding], console: Console, *, inputs: Sequence[str] = (), empty: str = ""
) -> None:
    """Print ``findings`` as blocks (severity, id, where; then cause, fix, source, evidence)."""
    if inputs:
        console.print(Text.assemble(("read: ", "bold"), ", ".join(inputs)), soft_wrap=True)
    for finding in findings:
        console.print()
        _block(finding, console)
    console.print()
    if not findings:
        console.print(Text(empty or "no known symptom found", style="green"))
        return
    counts = [
        f"{n} {s.value}{'s' if n != 1 else ''}"
        for s in reversed(Severity)
        if (n := sum(f.severity is s for f in findings))
    ]
    console.print(Text.assemble(("doctor: ", "bold"), ", ".join(counts)))


def _block(finding: Finding, console: Console) -> None:
    head = Text.assemble(
        (finding.severity.value.ljust(_LABEL_WIDTH), _STYLE[finding.severity]),
        (finding.id, "bold"),
    )
    if finding.where:
        head.append(f"  {finding.where}")
    console.print(head, soft_wrap=True)
    for label, value in (
        ("cause", finding.cause),
        ("fix", finding.fix),
        ("source", finding.source),
        ("seen", finding.evidence),
    ):
        if value:
            console.print(Text.assemble(("  " + label.ljust(_LABEL_WIDTH), "bold"), value))
