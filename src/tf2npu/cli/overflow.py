"""``tf2npu overflow``: the first overflowing ops of an overflow dump, and the fix."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from tf2npu import exit_codes
from tf2npu.cli.console import make_console
from tf2npu.cli.paths import check_output_dir, kind_of, path_arg
from tf2npu.debug.overflow.report import (
    MIXLIST_NAME,
    Outputs,
    detail_lines,
    status_lines,
    title,
    to_json,
    write_outputs,
)
from tf2npu.errors import UsageError

if TYPE_CHECKING:
    from tf2npu.debug.overflow.analysis import OverflowReport

DESCRIPTION = """\
Read an overflow dump (what a run writes with enable_dump_debug=True, or precision_tool's
action='overflow' into precision_data/overflow/dump) and list the first N ops that overflowed,
in execution order: the first one is the one to fix, later ones usually follow from it.

For each op: what the device status says ([AI Core][Status:32] = floating-point overflow), the
[Shape][Dtype][Max][Min][Mean] of its inputs and outputs (clean inputs and an Inf, NaN or 65504
output mean the op itself overflowed), the ops of your graph it stands for and the line of your
script that created them, and the fix: move the op type to float32 with a modify_mixlist black
list, or create the op under npu_scope.keep_dtype_scope().

Records are found at any depth under DUMP_DIR, ordered by the timestamp in their names: the raw
files the device and tf2npu run write, Opdebug.Node_OpDebug.<task>.<stream>.<ts> (the TLV dump
layout; a device file in the protobuf layout needs CANN: convert it with msaccucmp first), and
msaccucmp convert's JSON of them, <raw name>.output.0.json (old "AI Core" objects, new
"acc_list"). A record found in both forms is read once.
"""
EPILOG = f"""\
examples:
  mkdir -p ovf                             dump_path must exist
  tf2npu run --option enable_dump_debug=true --option dump_path=ovf train.py
  tf2npu overflow ovf                      the first overflowing op
  tf2npu overflow ovf -n 5 --out report/   the first five; files into report/
  tf2npu overflow precision_data/overflow/dump --json > overflow.json
  tf2npu run --precision-mode allow_mix_precision \\
      --option modify_mixlist=ovf/{MIXLIST_NAME} train.py

files written (into --out, default DUMP_DIR; nothing when no overflow is found):
  overflow_summary_<YYYYmmddHHMMSS>.txt
      msaccucmp's layout: one =====[i]===== block per op, in execution order
  {MIXLIST_NAME}
      {{"black-list": {{"to-add": [...]}}}}: every op type the fixes move to float32 (written
      when a float16 op overflowed); merge it into your own modify_mixlist if you have one

exit codes: 0 overflows listed, or "no overflow found" (an overflow is a finding to read, not a
failure: with dynamic loss scaling a skipped step is normal; scripts test `--json` output, e.g.
jq '.overflows | length'); 2 bad usage: DUMP_DIR missing or not a folder, a tree with tensor
dumps but no overflow record, a broken record (or a raw one in the protobuf layout), -n below 1,
an --out that cannot be written. Details: docs/overflow.md.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dump_dir",
        metavar="DUMP_DIR",
        type=path_arg,
        help="the dump_path of a run with enable_dump_debug (any folder above the records)",
    )
    parser.add_argument(
        "-n",
        dest="limit",
        type=int,
        default=1,
        metavar="N",
        help="how many overflowing ops to list, earliest first (default: 1)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        type=path_arg,
        help="folder for the summary and the mixlist (default: DUMP_DIR)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the panels"
    )


def run(args: argparse.Namespace) -> int:
    from tf2npu.debug.overflow.analysis import analyse

    _check_args(args)
    report = analyse(args.dump_dir, args.limit)
    _check_is_overflow_dump(report)
    outputs = Outputs(None, None)
    if report.overflows:
        out: Path = args.out if args.out is not None else args.dump_dir
        check_output_dir(out, "--out" if args.out is not None else "DUMP_DIR (no --out given)")
        outputs = write_outputs(report, out, datetime.now())
    if args.json:
        sys.stdout.write(json.dumps(to_json(report, outputs), indent=1) + "\n")
    else:
        print_report(report, outputs, make_console())
    return exit_codes.OK


def _check_args(args: argparse.Namespace) -> None:
    if args.limit < 1:
        raise UsageError(
            f"-n {args.limit}: give how many overflowing ops to list, a number >= 1 "
            "(default 1: the first in execution order)"
        )
    path: Path = args.dump_dir
    if not path.exists():
        raise UsageError(
            f"DUMP_DIR {str(path)!r} does not exist; give the dump_path of a run with "
            "enable_dump_debug=True (or precision_data/overflow/dump)"
        )
    if not path.is_dir():
        fix = f"give the folder that holds it: {str(path.parent)!r}"
        if not path.is_file():
            fix = "give the folder the overflow dump was written into"
        raise UsageError(f"DUMP_DIR {str(path)!r} is {_kind(path)}, not a folder; {fix}")


def _kind(path: Path) -> str:
    return "a file" if path.is_file() else kind_of(path)


def _check_is_overflow_dump(report: OverflowReport) -> None:
    if report.records:
        return
    root = str(report.root)
    if report.tensor_files:
        raise UsageError(
            f"DUMP_DIR {root!r} holds {report.tensor_files} tensor dump file(s) but no Opdebug "
            "record: it is a tensor dump (enable_dump), not an overflow dump; give the "
            "dump_path of a run with enable_dump_debug=True, or compare tensor dumps with "
            "tf2npu compare"
        )


def print_report(report: OverflowReport, outputs: Outputs, console: Console) -> None:
    """The precision_tool-style panels, then what was shown and the files written."""
    if not report.overflows:
        console.print(Text(_nothing_found(report)), soft_wrap=True)
        return
    for overflow in report.overflows:
        body = "\n".join(
            status_lines(overflow) + detail_lines(overflow, report.root, outputs.mixlist)
        )
        console.print(Panel(Text(body), title=Text(title(overflow)), expand=False))
    shown = len(report.overflows)
    more = f"; -n {report.records} lists all" if report.records > shown else ""
    lines = [
        f"Shown {shown} of {report.records} overflow record(s), earliest first: fix the first, "
        f"later ones usually follow from it{more}."
    ]
    if outputs.summary is not None:
        lines.append(f"Summary: {outputs.summary}")
    if outputs.mixlist is not None:
        lines.append(
            f"Mixlist: {outputs.mixlist} (use it: modify_mixlist={outputs.mixlist} with a mixed "
            f"precision mode, e.g. tf2npu run --option modify_mixlist={outputs.mixlist} ...)"
        )
    console.print(Text("\n".join(lines)), soft_wrap=True)


def _nothing_found(report: OverflowReport) -> str:
    if report.skipped:
        return (
            f"no overflow found in {report.root}: {report.records} Opdebug record(s), none with "
            "a status above 0"
        )
    return (
        f"no overflow found in {report.root}: no Opdebug record (the device writes none when "
        "nothing overflowed)"
    )
