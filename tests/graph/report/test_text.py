"""The terminal summary and the partition report, rendered from the hand-set run."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from tf2npu.graph.report.summary import GraphSummary
from tf2npu.graph.report.text import partition_report, print_summary, totals_line


def render(summary: GraphSummary, top: int = 10) -> str:
    out = io.StringIO()
    print_summary(summary, Console(file=out, width=200, color_system=None), top=top)
    return out.getvalue()


def test_totals_line(summary: GraphSummary) -> None:
    assert totals_line(summary) == (
        "6 nodes: 2 on the device in 1 GeOp, 4 on the host; 3 memcpy edges (4.0 KiB); "
        "2 casts inserted; 1 fusion"
    )


def test_totals_line_says_the_nodes_lowering_added_apart(summary: GraphSummary) -> None:
    lowered = dataclasses.replace(summary, lowering_nodes=80)
    assert totals_line(lowered) == (
        "6 nodes: 2 on the device in 1 GeOp (+80 that lowering added to run GeOps on the CPU), "
        "4 on the host; 3 memcpy edges (4.0 KiB); 2 casts inserted; 1 fusion"
    )


def test_summary_shows_every_section_once(summary: GraphSummary) -> None:
    text = render(summary)
    lines = text.splitlines()
    assert lines[0] == (
        "tf2npu graph inspect model.pbtxt (mixed compute, precision_mode allow_mix_precision)"
    )
    assert lines[1] == totals_line(summary)
    for expected in ("GeOp1_0", "not_in_library", "not_in_library       1   py", "matmul_biasadd",
                     "error   s [table_split]", "fix: keep the table ops together",
                     "warning (graph) [cast_heavy]", "Options without effect here",
                     "lower_functional_ops: function bodies are first-class in our IR",
                     "Pass seconds: placement 0.250, precision 0.125, partition 0.500; "
                     "total 0.875 s"):  # fmt: skip
        assert expected in text, expected
    assert text.count("lower_functional_ops") == 1
    assert "gelu" not in text  # rules applied 0 times are left out of the terminal table


def test_top_limits_the_reason_groups(summary: GraphSummary) -> None:
    text = render(summary, top=1)
    assert "total (3 more reasons)" in text
    assert "gray_op" in text  # ties sort by reason: gray_op first
    assert "not_in_library" not in text


def test_partition_report_lists_everything(summary: GraphSummary) -> None:
    assert partition_report(summary) == (
        "Partition of model.pbtxt (mixed compute, precision_mode allow_mix_precision)\n"
        f"{totals_line(summary)}\n"
        "\n"
        "GeOp GeOp1_0: 2 nodes\n"
        "  inputs (2):\n"
        "    py\n"
        "    x\n"
        "  outputs (1):\n"
        "    relu\n"
        "\n"
        "Host ops (4), by reason:\n"
        "  gray_op (1)\n"
        "    s (AsString): AsString: gray op, host in mixed compute\n"
        "  not_in_library (1)\n"
        "    py (PyFunc): PyFunc: not in the device op library\n"
        "  outside_geop (1)\n"
        "    x (Placeholder): Placeholder: the device can run it, but no GeOp holds it\n"
        "  undecided (1)\n"
        "    c (Const): Const: no placement decision (the placement pass did not run)\n"
        "\n"
        "Errors (1):\n"
        "  [table_split] s: the lookup table is split between host and device "
        "Fix: keep the table ops together (mix_compile_mode)\n"
        "\n"
        "Warnings (1):\n"
        "  [cast_heavy] many casts on the loss path\n"
        "\n"
        "Pass seconds: placement 0.250, precision 0.125, partition 0.500; total 0.875 s\n"
    )
