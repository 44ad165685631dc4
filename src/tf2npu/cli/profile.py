"""``tf2npu profile``: run a script with its NPU sessions profiled, then analyse, in one go.

It is ``tf2npu run --profile DIR --profile-steps 0-(N-1)`` followed by a look at the advice; with
``--from DIR`` it only analyses a profile folder again (no TensorFlow needed).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from tf2npu import exit_codes
from tf2npu.cli.npu_flags import add_option_flag
from tf2npu.cli.paths import check_output_dir, path_arg
from tf2npu.config.profiling import profile_options
from tf2npu.errors import UsageError

DESCRIPTION = """\
Run SCRIPT as `tf2npu run` would, tracing the first N runs of each run signature of its NPU
sessions with TensorFlow's FULL_TRACE step statistics, and map every op back to what the graph
engine decided (GeOp or host, precision cast, fusion) and to the line of the script that made
it. Then write, under OUT/PROF_<time>/:

  mindstudio_profiler_output/op_summary_<time>.csv    msprof's columns (no device PMU columns)
  mindstudio_profiler_output/op_statistic_<time>.csv  per op type: count, times, share
  mindstudio_profiler_output/step_trace_<time>.csv    FP start, BP end, iteration time, data-aug
                                                      bound, GetNext, host-device copies
  mindstudio_profiler_output/trace_view.json          timeline for Perfetto / chrome://tracing
  advice.md, advice.json                              the advisor's findings (node, line, fix)
  profile.html                                        one self-contained page of it all:
                                                      advice linked to its ops, step breakdown
                                                      (input, device, host, copies, other), the
                                                      timeline drawn in (zoom: wheel), tables

The first run of each signature builds TensorFlow's executor; the advice uses the later runs.
"""
EPILOG = """\
examples:
  tf2npu profile -- train.py --epochs 1                 # 10 traced runs per signature
  tf2npu profile --steps 5 --out prof -- train.py
  tf2npu profile --option precision_mode=allow_mix_precision -- train.py
  tf2npu profile --from prof/PROF_20240101120000         # analyse again, offline

A float16 ReduceSum found this way (seed 000 case 04) reads, in advice.md:
  warning: reduce_sum_fp16 - `colsum/_tf2npu_fp16`
  Cause: ... reduces a float16 input (256,512) on the device: float16 ReduceSum cannot use
         several AI Cores (block_dim 1) ...
  Where: train.py:9 in <module>
  Fix:   ... write {"black-list": {"to-add": ["ReduceSumD"]}} to a JSON file and pass its
         path as modify_mixlist ...

Only NPU sessions are profiled (a session config with NpuOptimizer, as a migrated script has):
an original script has none, and profile says so and exits 1.

Details: docs/profile.md. exit codes: the script's exit status; 1 when the script ran but
created no NPU session; 2 bad usage; with --from, 1 when a folder cannot be analysed.
"""
DEFAULT_OUT = Path("tf2npu-profile")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "%(prog)s [-h] [--steps N] [--out DIR] [--option KEY=VALUE] -- SCRIPT [ARGS ...]\n"
        "       %(prog)s --from DIR"
    )
    parser.add_argument(
        "script_argv",
        metavar="SCRIPT [ARGS]",
        nargs=argparse.REMAINDER,
        help="the script and its arguments (after --)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=10,
        metavar="N",
        help="trace the first N runs of each run signature (default 10)",
    )
    parser.add_argument(
        "--out",
        type=path_arg,
        default=DEFAULT_OUT,
        metavar="DIR",
        help="where PROF_<time>/ goes (default ./tf2npu-profile); the run summary goes there too",
    )
    add_option_flag(parser, "every NPU session of the profiled run")
    parser.add_argument(
        "--from",
        dest="source",
        type=path_arg,
        metavar="DIR",
        help="analyse the profile(s) in DIR again (a PROF_* folder or one holding them); "
        "runs nothing",
    )


def run(args: argparse.Namespace) -> int:
    if args.source is not None:
        if args.script_argv:
            raise UsageError("--from analyses a profile folder; give no SCRIPT with it")
        return _analyse_again(args.source)
    if args.steps < 1:
        raise UsageError(f"--steps {args.steps}: give at least 1 (runs traced per signature)")
    from tf2npu.cli import run as run_command
    from tf2npu.cli.engine_flags import environment_overrides
    from tf2npu.runtime.dropout import dropout_off_from_env
    from tf2npu.runtime.job import RunSpec
    from tf2npu.runtime.record import max_steps_from_env, record_from_env
    from tf2npu.runtime.settings import DEFAULT_EXECUTION

    command = list(args.script_argv)
    if command[:1] == ["--"]:
        del command[0]
    if not command:
        raise UsageError("no SCRIPT given; e.g. tf2npu profile -- train.py --epochs 1")
    check_output_dir(args.out, "--out")  # before the run would name it --report-dir
    out = args.out.resolve()
    spec = RunSpec(
        script=run_command.checked_script(command[0]),
        script_args=tuple(command[1:]),
        report_dir=out,
        options=(*args.option, *profile_options(out)),
        npu=True,
        execution=DEFAULT_EXECUTION,
        profile=out,
        profile_steps=f"0-{args.steps - 1}",
        record=record_from_env(os.environ),
        max_steps=max_steps_from_env(os.environ),
        dropout_off=dropout_off_from_env(os.environ),
    )
    spec = replace(spec, engine=environment_overrides(os.environ))
    status = run_command.run_spec(spec, {}, {})  # --out was checked above
    _print_advice()
    if not runtime_sessions():
        print(
            "tf2npu profile: the script created no NPU session (no session config carries "
            "NpuOptimizer), so nothing was profiled; profile the migrated script "
            "(tf2npu migrate SCRIPT -o OUT/), or a script that sets npu_config_proto() / "
            "NPURunConfig",
            file=sys.stderr,
        )
        return exit_codes.FINDINGS if status == exit_codes.OK else status
    return status


def runtime_sessions() -> int:
    """How many NPU sessions the run created (profiling reaches only those)."""
    from tf2npu import runtime

    return runtime.context().stats.sessions


def _print_advice() -> None:
    from tf2npu import runtime
    from tf2npu.runtime.profile import OpProfile

    for instrument in runtime.context().extra_instruments:
        if isinstance(instrument, OpProfile) and instrument.analysis is not None:
            _show(instrument.analysis)


def _analyse_again(source: Path) -> int:
    from tf2npu.artifacts.profile_raw import find_profiles
    from tf2npu.debug.profile.report import analyse, write_outputs

    try:
        folders = find_profiles(source)
    except ValueError as err:
        raise UsageError(str(err)) from None
    status = exit_codes.OK
    for folder in folders:
        try:
            analysis = analyse(folder)
            write_outputs(analysis)
        except (OSError, ValueError) as err:
            print(f"tf2npu profile: error: {folder}: {err}", file=sys.stderr)
            status = exit_codes.FINDINGS
            continue
        _show(analysis)
    return status


def _show(analysis: object) -> None:
    from tf2npu.debug.profile.report import ADVICE_MD, Analysis

    assert isinstance(analysis, Analysis)
    print(f"tf2npu profile: {analysis.summary_line()}", file=sys.stderr)
    for finding in analysis.findings:
        place = finding.where
        line = f":{place.line}" if place.line else ""
        where = f" ({place.file}{line})" if place.file else ""
        what = place.node or finding.cause
        print(f"  {finding.severity.value}: {finding.id}: {what}{where}", file=sys.stderr)
    print(f"  details: {analysis.profile.directory / ADVICE_MD}", file=sys.stderr)
