"""Human-readable views of a :class:`GraphSummary`: the terminal summary and the partition report.

The terminal summary (``tf2npu graph inspect`` without ``--json``) fits 80 columns: totals,
GeOps, host ops grouped by reason (the largest groups first), fusions applied, the first errors
and warnings, options without effect here (once), and pass timings. It uses rich like
``tf2npu migrate``; all text goes through :class:`rich.text.Text`, so brackets in node names
are never read as markup. The partition report (``partition_report.txt`` in ``--dump-dir``) is
plain text and lists everything, without limits.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tf2npu.graph.decisions import Diagnostic
from tf2npu.graph.report.summary import GraphSummary

__all__ = ["DIAGNOSTICS_SHOWN", "REASONS_SHOWN", "partition_report", "print_summary"]

REASONS_SHOWN = 10
"""Host-op reason groups shown in the terminal (``--top`` changes it)."""
DIAGNOSTICS_SHOWN = 10
EXAMPLES_SHOWN = 3

_PLAIN_BOX = box.Box(
    "    \n    \n -- \n    \n    \n -- \n    \n    \n",
    ascii=True,
)
_STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def mode_label(summary: GraphSummary) -> str:
    """``mixed compute`` or ``full offload``, and the precision mode."""
    mode = "mixed compute" if summary.mix_compile_mode else "full offload"
    return f"{mode}, precision_mode {summary.precision_mode}"


def totals_line(summary: GraphSummary) -> str:
    """One sentence with the headline counts."""
    geops = _counted(len(summary.geops), "GeOp")
    lowered = ""
    if summary.lowering_nodes:
        lowered = f" (+{summary.lowering_nodes:,} that lowering added to run GeOps on the CPU)"
    return (
        f"{_counted(summary.nodes, 'node')}: {summary.device_nodes:,} on the device in {geops}"
        f"{lowered}, {summary.host_nodes:,} on the host; "
        f"{_counted(summary.memcpy_edges, 'memcpy edge')}"
        f" ({_bytes(summary.memcpy_bytes)}); {_counted(summary.casts_inserted, 'cast')} "
        f"inserted; {_counted(summary.fusions_applied, 'fusion')}"
    )


def print_summary(summary: GraphSummary, console: Console, top: int = REASONS_SHOWN) -> None:
    """Print the terminal summary of ``summary`` to ``console``."""
    table_box = box.SIMPLE if console.is_terminal else _PLAIN_BOX
    title = Text("tf2npu graph inspect", style="bold")
    title.append(f" {summary.graph} ({mode_label(summary)})")
    console.print(title)
    console.print(Text(totals_line(summary)))
    if summary.geops:
        console.print(_geop_table(summary, table_box))
    if summary.host_ops:
        console.print(_host_table(summary, table_box, top))
    applied = {rule: n for rule, n in summary.fusions.items() if n}
    if applied:
        console.print(_count_table("Fusion rule", "Applied", applied, table_box))
    _print_diagnostics(summary, console)
    if summary.no_effect:
        console.print(Text("Options without effect here", style="bold"))
        for name, why in summary.no_effect:
            console.print(Padding(Text(f"{name}: {why}"), (0, 0, 0, 2)))
    console.print(Text(timings_line(summary), style="dim"))


def timings_line(summary: GraphSummary) -> str:
    parts = [f"{name} {seconds:.3f}" for name, seconds in summary.pass_seconds.items()]
    return f"Pass seconds: {', '.join(parts) or 'none ran'}; total {summary.total_seconds:.3f} s"


def _table(table_box: box.Box, footer: bool = False) -> Table:
    return Table(box=table_box, show_edge=False, show_footer=footer, footer_style="bold")


def _geop_table(summary: GraphSummary, table_box: box.Box) -> Table:
    table = _table(table_box)
    table.add_column("GeOp", overflow="fold")
    for column in ("Nodes", "Inputs", "Outputs"):
        table.add_column(column, justify="right")
    for geop in summary.geops:
        table.add_row(
            Text(geop.name), f"{geop.nodes:,}", str(len(geop.inputs)), str(len(geop.outputs))
        )
    return table


def _host_table(summary: GraphSummary, table_box: box.Box, top: int) -> Table:
    groups = summary.host_ops_by_reason()
    table = _table(table_box, footer=True)
    shown = groups[:top]
    more = f"total ({len(groups) - len(shown)} more reasons)" if len(groups) > top else "total"
    table.add_column("Host reason", footer=more, overflow="fold")
    table.add_column("Nodes", footer=f"{summary.host_nodes:,}", justify="right")
    table.add_column("Examples", overflow="fold")
    for reason, ops in shown:
        examples = ", ".join(_short_name(op.name) for op in ops[:EXAMPLES_SHOWN])
        if len(ops) > EXAMPLES_SHOWN:
            examples += ", ..."
        table.add_row(Text(reason), f"{len(ops):,}", Text(examples))
    return table


def _count_table(label: str, count: str, rows: dict[str, int], table_box: box.Box) -> Table:
    table = _table(table_box, footer=True)
    table.add_column(label, footer="total", overflow="fold")
    table.add_column(count, footer=str(sum(rows.values())), justify="right")
    for name, n in rows.items():
        table.add_row(Text(name), str(n))
    return table


def _print_diagnostics(summary: GraphSummary, console: Console) -> None:
    items = [*summary.errors, *summary.warnings]
    if not items:
        return
    shown = items[:DIAGNOSTICS_SHOWN]
    heading = "Errors and warnings"
    if len(items) > len(shown):
        heading += f" (first {len(shown)} of {len(items)})"
    console.print(Text(heading, style="bold"))
    for item in shown:
        head = Text(f"{item.severity:<8}", style=_STYLES.get(item.severity, ""))
        head.append(item.node or "(graph)")
        head.append(f" [{item.code}]", style="dim")
        console.print(head)
        body = Text(item.message)
        if item.fix:
            body.append(f"\nfix: {item.fix}", style="dim")
        console.print(Padding(body, (0, 0, 0, 8)))


def partition_report(summary: GraphSummary) -> str:
    """The full partition as plain text: every GeOp with its boundary, every host op."""
    lines = [
        f"Partition of {summary.graph or 'the graph'} ({mode_label(summary)})",
        totals_line(summary),
        "",
    ]
    if not summary.partitioned:
        lines += ["The partition pass did not run: no GeOps were formed.", ""]
    for geop in summary.geops:
        lines.append(f"GeOp {geop.name}: {_counted(geop.nodes, 'node')}")
        lines += _listed("inputs", geop.inputs) + _listed("outputs", geop.outputs) + [""]
    lines.append(f"Host ops ({summary.host_nodes:,}), by reason:")
    for reason, ops in summary.host_ops_by_reason():
        lines.append(f"  {reason} ({len(ops):,})")
        lines += [f"    {op.name} ({op.type}): {op.message}" for op in ops]
    lines += ["", *_diagnostic_lines(summary.errors, "Errors")]
    lines += _diagnostic_lines(summary.warnings, "Warnings")
    lines.append(timings_line(summary))
    return "\n".join(lines) + "\n"


def _listed(label: str, names: tuple[str, ...]) -> list[str]:
    if not names:
        return [f"  {label}: none"]
    return [f"  {label} ({len(names)}):", *(f"    {name}" for name in names)]


def _diagnostic_lines(items: tuple[Diagnostic, ...], label: str) -> list[str]:
    if not items:
        return []
    return [f"{label} ({len(items)}):", *(f"  [{d.code}] {d.render()}" for d in items), ""]


def _short_name(name: str, width: int = 32) -> str:
    """The end of a long scoped name (the end tells nodes apart: ``.../Adam/update``)."""
    return name if len(name) <= width else "..." + name[-(width - 3) :]


def _counted(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"
