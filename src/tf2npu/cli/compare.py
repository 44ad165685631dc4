"""``tf2npu compare``: msaccucmp's tensor comparison of two dump trees, with verdicts."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tf2npu import exit_codes
from tf2npu.cli.console import make_console
from tf2npu.cli.paths import check_input_file, check_output_dir, check_output_file, path_arg

if TYPE_CHECKING:  # numpy: imported when the command runs, not for every tf2npu command
    from tf2npu.debug.compare.advisor import Advice
    from tf2npu.debug.compare.trees import CompareReport, Divergence, TensorDiff

DESCRIPTION = """\
Compare the tensors of NPU_DUMP with those of GOLDEN_DUMP, as Ascend's msaccucmp does, and
say which tensors agree. NPU_DUMP is the side under test; GOLDEN_DUMP the reference. Either may
be an NPU dump (tf2npu run with enable_dump / --dump, or a real device dump converted by
`msaccucmp.py convert`) or a golden dump (tf2npu run --no-npu --dump DIR); NPU vs NPU compares,
e.g., a run with fusions on against one with fusions off.

An NPU tensor is matched through the model's graph JSON (ge_proto_*_Build.json, found in the
dump, or -f): fused and cast ops are compared under the user's op names they stand for.

Writes result_<YYYYmmddHHMMSS>.csv into --out with msaccucmp's columns and three of ours at the
end (Verdict, Reason, RequiredTolerance), prints a summary naming the first divergent op (the
first op whose outputs fail while its inputs agree), and exits 1 when a tensor fails or cannot
be read. A CSV never replaces another: a name taken in the same second gets _1, _2, ...
"""
EPILOG = """\
examples:
  # seed 001: which fusion breaks accuracy? dump one step with fusions on and off ...
  tf2npu run --dump dump_on --dump-step 0 train.py
  tf2npu run --dump dump_off --dump-step 0 --fusion-switch-file fusion_off.cfg train.py
  # ... and compare them; the first divergent op is the fused op to switch off
  tf2npu compare dump_on dump_off --out cmp/
  # NPU against the CPU golden, with the vendor's advisor and looser float16 bounds for dense/*
  tf2npu run --no-npu --dump golden train.py
  tf2npu compare dump_on golden --advisor --tolerance 'dense/*=2e-2,2e-2'
  # the same as a page: tensors in order with their metrics, the first divergent op marked
  tf2npu compare dump_on dump_off --out cmp/ --html cmp/compare.html
  # a real device dump, converted first, with its graph JSON
  tf2npu compare npu_npy/ golden/ -f ge_proto_00000001_Build.json --alg 0,1,7

tolerances (a tensor passes when every element has |npu - truth| <= ATOL + RTOL*|truth|):
  float32 1e-5 + 1e-4, float16 1e-2 + 1e-2, bfloat16 5e-2 + 5e-2, float64 1e-8 + 1e-7,
  other dtypes exact. A float tensor is judged as the coarsest float dtype it went through
  (a float32 cast of a float16 result is judged as float16). --tolerance PATTERN=ATOL,RTOL
  applies to tensors whose user op name (or NPU op name) matches the fnmatch PATTERN; the
  last matching rule wins. RequiredTolerance is the smallest ATOL that tensor would pass with.

algorithms (--alg, names or indices): 0 CosineSimilarity, 1 MaxAbsoluteError,
  2 AccumulatedRelativeError, 3 RelativeEuclideanDistance, 4 KullbackLeiblerDivergence,
  5 StandardDeviation, 6 MeanAbsoluteError, 7 RootMeanSquareError, 8 MaxRelativeError,
  9 MeanRelativeError.

exit codes: 0 every tensor read and none fails its tolerance; 1 some tensor fails or cannot
be read (a damaged file, a FIFO); 2 bad usage, found before any comparison: a missing or
empty dump folder, device files not converted to .npy, no tensor with a counterpart, an
unreadable graph JSON or dump folder, a bad --alg or --tolerance, an unwritable --out or
--html (a folder, or in a folder that cannot be written; an existing file is replaced).
Details: docs/debugging.md.
"""
FAILED_SHOWN = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("npu_dump", metavar="NPU_DUMP", type=path_arg, help="dump under test")
    parser.add_argument("golden_dump", metavar="GOLDEN_DUMP", type=path_arg, help="reference dump")
    graphs = parser.add_argument_group("graph JSONs (default: the ones in the dump folders)")
    graphs.add_argument(
        "-f",
        "--graph-json",
        metavar="GRAPH_JSON",
        type=path_arg,
        help="NPU_DUMP's graph JSON (msaccucmp's -f fusion rule file)",
    )
    graphs.add_argument(
        "-cf",
        "--close-fusion-graph-json",
        metavar="CLOSE_FUSION_GRAPH_JSON",
        type=path_arg,
        help="GOLDEN_DUMP's graph JSON when it is an NPU dump, e.g. fusions off (msaccucmp -cf)",
    )
    what = parser.add_argument_group("comparison")
    what.add_argument(
        "--alg",
        default="all",
        metavar="NAMES",
        help="algorithms: all (default), or names or indices 0-9 separated by commas",
    )
    what.add_argument(
        "--tolerance",
        action="append",
        default=[],
        metavar="PATTERN=ATOL,RTOL",
        help="tolerance for the tensors of ops matching PATTERN; repeat, the last match wins",
    )
    what.add_argument(
        "--overflow-detection",
        action="store_true",
        help="add the OverFlow column: YES when a float16 NPU tensor holds |x| >= 65504",
    )
    what.add_argument(
        "--advisor",
        action="store_true",
        help="write advisor_summary.txt, msaccucmp's expert advice (turns on overflow detection)",
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "--out",
        metavar="DIR",
        type=path_arg,
        default=Path("."),
        help="folder for the CSV and advisor_summary.txt (default: the current folder)",
    )
    out.add_argument(
        "--html",
        metavar="FILE",
        type=path_arg,
        help="also write one self-contained page: tensors in execution order with their "
        "metrics drawn, the first divergent op with its fusion pass, inputs and outputs",
    )
    out.add_argument(
        "--json",
        action="store_true",
        help="print the report as JSON (schema in docs/debugging.md) instead of the summary",
    )


def run(args: argparse.Namespace) -> int:
    """Compare the two dumps, write the CSV (and advisor summary), report, and exit."""
    from tf2npu.debug.compare.advisor import advise, write_summary
    from tf2npu.debug.compare.matching import plan_compare
    from tf2npu.debug.compare.metrics import select_algorithms
    from tf2npu.debug.compare.report import advisor_rows, dumps, input_nodes, to_json, write_csvs
    from tf2npu.debug.compare.tolerance import Tolerances
    from tf2npu.debug.compare.trees import compare_plan

    algorithms = select_algorithms(args.alg)
    tolerances = Tolerances.parse(args.tolerance)
    for flag, path in (("-f", args.graph_json), ("-cf", args.close_fusion_graph_json)):
        if path is not None:
            check_input_file(path, flag, "give a graph JSON file (ge_proto_*_Build.json)")
    check_output_dir(args.out, "--out")
    if args.html is not None:
        check_output_file(args.html, "--html", "compare.html")
    stamp = time.strftime("%Y%m%d%H%M%S")
    plan = plan_compare(
        args.npu_dump,
        args.golden_dump,
        graph_json=args.graph_json,
        close_graph_json=args.close_fusion_graph_json,
    )
    for note in plan.notes:
        print(f"tf2npu compare: note: {note}", file=sys.stderr)
    overflow = args.overflow_detection or args.advisor
    report = compare_plan(plan, algorithms, tolerances, overflow_detection=overflow)
    csvs = write_csvs(report, args.out, stamp)
    advice, advice_file = None, None
    if args.advisor:
        advice = advise(
            advisor_rows(report),
            input_nodes(report),
            cosine_column="CosineSimilarity" in algorithms,
        )
        advice_file = write_summary(advice, args.out)
    page = None
    if args.html is not None:
        from tf2npu.debug.compare.page import write_page

        page = write_page(report, args.html, csvs)
    if args.json:
        sys.stdout.write(dumps(to_json(report, csvs, advice, advice_file)))
    else:
        print_summary(report, csvs, advice, advice_file, make_console(), page)
    return exit_codes.OK if report else exit_codes.FINDINGS


# -- terminal summary ------------------------------------------------------------------------


def print_summary(
    report: CompareReport,
    csvs: list[Path],
    advice: Advice | None,
    advice_file: Path | None,
    console: Console,
    page: Path | None = None,
) -> None:
    """The short summary: counts, the first divergent op, failures, advice, files."""
    plan = report.plan
    title = Text("tf2npu compare", style="bold")
    steps = sorted({str(u.unit.step) for u in report.units if u.unit.step is not None})
    where = f", step {', '.join(steps)}" if steps else ""
    title.append(f" {plan.mode}, {_counted(len(report.units), 'unit')}{where}")
    console.print(title)
    console.print(Text(f"  NPU_DUMP     {plan.left}\n  GOLDEN_DUMP  {plan.right}"))
    console.print(Text(_totals(report)))
    _print_divergence(report, console)
    failed = list(report.failed())
    if failed:
        console.print(_failed_table(failed, console))
    if advice is not None:
        line = Text("Advisor: ", style="bold")
        line.append(f"{advice.detection_type}, Operator Index {advice.operator_index}: ")
        line.append(advice.advice.strip())
        if advice_file is not None:
            line.append(f" ({advice_file})", style="dim")
        console.print(line)
    for path in csvs:
        console.print(Text.assemble(("CSV: ", "bold"), str(path)), soft_wrap=True)
    if page is not None:
        console.print(Text.assemble(("HTML: ", "bold"), str(page)), soft_wrap=True)


def _totals(report: CompareReport) -> str:
    counts = report.counts()
    total = sum(counts[v] for v in ("pass", "fail", "unmatched", "error"))
    text = (
        f"{_counted(total, 'row')}: {counts['compared']:,} compared ({counts['pass']:,} pass, "
        f"{counts['fail']:,} fail), {counts['unmatched']:,} unmatched, {counts['error']:,} "
        f"unreadable; {report.bytes_read / 1e6:,.1f} MB in {report.seconds:.2f} s"
    )
    return text


def _print_divergence(report: CompareReport, console: Console) -> None:
    first = report.first_divergence()
    if first is None:
        unreadable = report.counts()["error"]
        verdict = "none: no tensor fails" if report else "none found"
        if unreadable:
            verdict = (
                f"none found, but {_counted(unreadable, 'tensor')} could not be read (see the "
                "Reason column of the CSV): the dumps are not shown to agree"
            )
        console.print(Text.assemble(("First divergent op: ", "bold"), verdict))
        return
    op = first.op
    head = Text.assemble(("First divergent op: ", "bold"), (f"Index {op.index} ", ""))
    head.append(op.name, style="bold red")
    head.append(f" ({op.type})")
    users = [name for name in op.user_names if name != op.name]
    if users:
        head.append(f", user ops {', '.join(users)}")
    if op.pass_name:
        head.append(f", made by fusion pass {op.pass_name}")
    counterpart = first.counterpart_pass_name
    if counterpart and counterpart != op.pass_name:
        head.append(f"; its counterpart in GOLDEN_DUMP was made by fusion pass {counterpart}")
    console.print(head)
    for diff in first.failed:
        console.print(Text(f"  {diff.verdict} {diff.pair.tensor_index}: {diff.reason}"))
    console.print(Text(f"  inputs: {_inputs(first)}"))
    others = len(report.divergences()) - 1
    if others:
        console.print(Text(f"  {_counted(others, 'more op')} where a difference starts (--json)"))


def _inputs(found: Divergence) -> str:
    if not found.inputs_agree and not found.inputs_unknown:
        return "none"
    text = f"{found.inputs_agree} agree"
    if found.inputs_unknown:
        text += f", {found.inputs_unknown} not judged (not dumped or not matched)"
    return text


def _failed_table(failed: list[TensorDiff], console: Console) -> Table:
    shown = failed[:FAILED_SHOWN]
    title = "Failed tensors" + (
        f" (first {len(shown)} of {len(failed)})" if len(failed) > len(shown) else ""
    )
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE if console.is_terminal else box.ASCII2,
        show_edge=False,
    )
    table.add_column("Index", justify="right")
    table.add_column("TensorIndex", overflow="fold")
    for column in ("Cosine", "MaxAbsErr", "Required", "ATOL"):
        table.add_column(column, justify="right")
    for diff in shown:
        cosine = diff.metric("CosineSimilarity")
        max_abs = diff.metric("MaxAbsoluteError")
        atol = "" if diff.tolerance is None else f"{diff.tolerance.atol:g}"
        table.add_row(
            str(diff.pair.index),
            Text(diff.pair.tensor_index),
            "" if cosine is None else cosine.text,
            "" if max_abs is None else max_abs.text,
            f"{diff.required:.3e}",
            atol,
        )
    return table


def _counted(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
