"""``tf2npu doctor``: an error log (and a run folder, a script) in; cause, fix and place out."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from tf2npu import exit_codes
from tf2npu.cli.console import make_console
from tf2npu.cli.findings_view import print_findings
from tf2npu.cli.paths import path_arg
from tf2npu.errors import UsageError
from tf2npu.findings import Severity

if TYPE_CHECKING:
    from tf2npu.debug.doctor.logtext import Log

DESCRIPTION = """\
Read what a failed (or slow, or diverging) TF-on-Ascend run left behind and say what went
wrong: for each known symptom its id, the cause in one sentence, the fix as the exact change
(an option with its value, a modify_mixlist JSON, a code edit such as
tf.enable_control_flow_v2()), and where: the node and the line of your script, when the log or
the run folder names them. No TensorFlow is imported; logs from the device work as well as
logs of tf2npu run.

LOG files are error logs: TensorFlow tracebacks, adapter/GE/HCCL messages (E30008, EI0002,
EZ3002, [GEOP] ...), plog lines, tf2npu run's own output; `-` reads standard input. An
op_summary CSV of a profile is a LOG too. Several ranks' logs together also show whether the
ranks compiled different graphs.

--run-dir reads a tf2npu run report folder: run_summary.json (non-finite loss, loss scale,
unknown options, exit status), check_result.tf.json (ops that run on the host here but would
fail on the device), the overflow dump the run wrote, op_summary_*.csv below it.

--script checks a script before it runs, read-only: the migration's hazards (lookup tables and
variables in the input pipeline, v1 control flow with dynamic shapes, ...) with the failure each
one leads to on the device.

The symptoms are a table (docs/doctor.md lists them): the 29 common TF-on-Ascend error
messages, every error tf2npu raises, and the graph engine's diagnostic codes (the same codes
tf2npu graph inspect prints).
"""
EPILOG = """\
examples:
  tf2npu run --report-dir runs/a train.py 2>&1 | tee run.log
  tf2npu doctor run.log --run-dir runs/a      the log and the report folder together
  tf2npu doctor --script train.py             what train.py would hit, before running it
  tf2npu doctor rank0/plog.log rank1/plog.log several ranks' logs
  grep -B5 -A20 Traceback job.out | tf2npu doctor -
  tf2npu doctor run.log --json | jq -r '.symptoms[].id'

a finding (one per symptom and place):
  error  table_split  node 'hash_table' (HashTableV2) at train.py:16
    cause   a lookup table is created and initialised on the device ...
    fix     enable mixed compute: custom_op.parameter_map["mix_compile_mode"].b = True ...
    source  seed 000 case 01; hicann/tensorflow docs/.../resource_operator_preprocess_fix.md
    seen    run.log:5: tf2npu run: error: train.py:16: graph 1 cannot run on the device: ...

--json: {"symptoms": [{"id", "severity", "cause", "fix", "where": {"node", "op_type",
"file", "line"}, "source", "evidence"}, ...], "counts": {"error", "warning", "info"}}

exit codes: 1 when a symptom at error level is found; 0 otherwise (warnings and notes, or
nothing found); 2 bad usage: nothing to read, a LOG, --run-dir or --script that is missing or
unreadable. Details: docs/doctor.md.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "logs",
        metavar="LOG",
        nargs="*",
        help="error log files to read; - reads standard input",
    )
    parser.add_argument(
        "--run-dir",
        metavar="DIR",
        type=path_arg,
        help="a tf2npu run report folder (run_summary.json, check_result.tf.json, dumps)",
    )
    parser.add_argument(
        "--script",
        metavar="FILE",
        type=path_arg,
        help="the training script: static checks before a run, and its lines in tracebacks",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the findings"
    )


def run(args: argparse.Namespace) -> int:
    from tf2npu.debug.doctor.logtext import STDIN, read_log
    from tf2npu.debug.doctor.match import diagnose
    from tf2npu.debug.doctor.rundir import read_run_dir

    if not args.logs and args.run_dir is None and args.script is None:
        raise UsageError(
            "nothing to read; give a LOG file (- for standard input), --run-dir DIR or "
            "--script FILE, e.g. tf2npu doctor run.log --run-dir tf2npu-run"
        )
    if args.logs.count(STDIN) > 1:
        raise UsageError("LOG - (standard input) is given twice; give it once")
    logs = [read_log(name) for name in args.logs]
    run_dir = read_run_dir(args.run_dir) if args.run_dir is not None else None
    findings = diagnose(logs, run_dir, args.script)
    if args.json:
        counts = {s.value: sum(f.severity is s for f in findings) for s in reversed(Severity)}
        data = {"symptoms": [f.to_json() for f in findings], "counts": counts}
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        read = [log.name for log in logs] + [str(p) for p in (args.run_dir, args.script) if p]
        print_findings(findings, make_console(), inputs=read, empty=_nothing_found(logs))
    error = any(f.severity is Severity.ERROR for f in findings)
    return exit_codes.FINDINGS if error else exit_codes.OK


def _nothing_found(logs: list[Log]) -> str:
    """What to say when no symptom matched."""
    empty = [log for log in logs if not log.lines]
    note = (
        f" ({len(empty)} of the logs {'is' if len(empty) == 1 else 'are'} empty)" if empty else ""
    )
    return (
        f"no known symptom found{note}. Give doctor the whole log (the lines around the first "
        "error), the --run-dir of the run, or --script; docs/doctor.md lists what it knows."
    )
