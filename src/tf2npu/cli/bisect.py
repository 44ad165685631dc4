"""``tf2npu bisect fusion|precision``: find what breaks a run, in a bounded number of runs."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tf2npu import exit_codes
from tf2npu.cli.npu_flags import add_option_flag
from tf2npu.cli.paths import check_output_dir, checked_script, path_arg
from tf2npu.config.env import INJECT_FAULT_ENV
from tf2npu.debug.bisect.metric import DEFAULT_TOLERANCES
from tf2npu.errors import UsageError
from tf2npu.procs import signals_stop_children

if TYPE_CHECKING:
    from tf2npu.config.faults import FaultSpec
    from tf2npu.debug.bisect.metric import Metric
    from tf2npu.debug.bisect.report import KnownRules
    from tf2npu.debug.bisect.search import Bench, Trial

DESCRIPTION = """\
Run a script many times, each time in a fresh `tf2npu run` process with one engine override,
and narrow down what makes it train differently:

  tf2npu bisect fusion -- SCRIPT [ARGS]      which fusion rule, then which single instance of
                                             it (named by its root node), breaks the run
  tf2npu bisect precision -- SCRIPT [ARGS]   which op types (then nodes) must stay float32 under
                                             a mixed precision mode

fusion: runs the script with every fusion on and every fusion off (seed 001, step 1); the off
run is the reference. If they match, or the off run fails too, fusions are not the cause and
it stops there. Otherwise it halves the rules that fired until one is left, then the instances
of that rule, and checks the answer with one run with only that instance off. Runs: at most
ceil(log2(rules fired)) + ceil(log2(instances of the rule)) + 3.

precision: the reference is the must_keep_origin_dtype run. It runs --mode, collects the op
types that ran in float16, and finds a smallest set of them whose move to float32 (a
modify_mixlist black list) restores the run, then the fewest nodes of those types
(keep_dtype_scope); then it runs once more with the mixlist it wrote.

A trial matches the reference when its metric is within --tolerance of it (default 1e-4 for
fusion: fused ops compute what their ops did, up to float32 rounding; 1e-2 for precision:
float16 rounding): `loss` compares the loss the script fetched at every step (or only at the
end), `variables` the trainable variables at the end (largest relative difference). Every
trial runs with deterministic=1 (the script needs a graph seed to be reproducible). Finished
trials are kept in --out/bisect_state.json: run the same command again to resume an
interrupted bisection without running them again. Trials run in the current folder; a
script that restores a checkpoint from a fixed folder needs --clean FOLDER.
"""
EPILOG = """\
examples:
  tf2npu bisect fusion -- train.py --steps 20
  tf2npu bisect fusion --metric variables --out bisect-run1 -- train.py
  tf2npu bisect precision --mode allow_mix_precision -- train.py
  tf2npu bisect precision --option fusion_switch_file=sw.json --json -- train.py > found.json
  tf2npu bisect fusion --clean /tmp/out -- run_pretraining.py --output_dir /tmp/out
  tf2npu run --option fusion_switch_file=tf2npu-bisect-fusion/fusion_switch.json train.py

files written (into --out, default ./tf2npu-bisect-fusion or ./tf2npu-bisect-precision):
  fusion_switch.json         the guilty rule off, in Ascend's fusion_switch_file format
  fusion_instances_off.json  only the guilty instance off (TF2NPU_FUSION_INSTANCES=FILE)
  modify_mixlist.json        {"black-list": {"to-add": [GE op types]}} (modify_mixlist=FILE)
  keep_fp32.json             the nodes alternative (TF2NPU_KEEP_FP32=FILE)
  bisect.html                the trials drawn: distance from the reference per trial, the
                             loss per step of each, the table linking each trial's steps.html
  bisect_state.json          finished trials, by configuration (resume)
  trials/NN-LABEL/           each trial's report folder (run_summary.json, steps.jsonl, ...)

--json keys: kind, verdict, found, message, rule, aliases, instance, where, nodes, types, runs,
bound, metric, tolerance, switch_file, instances_file, mixlist_file, keep_file,
metric_by_run, trials, page. Details: docs/debugging.md#bisect.

exit codes: 0 a culprit found and its fix checked; 1 none found (fusions or float16 are not
the cause, the reference run fails, or the search is inconclusive: the message says which);
2 bad usage (no SCRIPT, a bad --option or --tolerance, an --out holding another bisection).
"""

REFERENCE_MODE = "must_keep_origin_dtype"
_SELF_SET = {"fusion": (), "precision": ("precision_mode", "precision_mode_v2")}
"""Options a kind of bisection sets itself in its trials (use its flags instead)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="kind", metavar="KIND")
    fusion = sub.add_parser(
        "fusion",
        help="the fusion rule and the single instance of it that break the run",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_common(fusion, "fusion")
    precision = sub.add_parser(
        "precision",
        help="the op types (then nodes) that must stay float32 under a mixed precision mode",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    precision.add_argument(
        "--mode",
        default="allow_mix_precision",
        metavar="MODE",
        help="the precision_mode under test (default: allow_mix_precision); the reference is "
        f"{REFERENCE_MODE}",
    )
    _add_common(precision, "precision")


def _add_common(parser: argparse.ArgumentParser, kind: str) -> None:
    parser.usage = (
        f"%(prog)s [-h]{' [--mode MODE]' if kind == 'precision' else ''} "
        "[--metric {loss,variables}] [--tolerance T]\n"
        "          [--out DIR] [--option KEY=VALUE ...] [--clean DIR ...] [--timeout S] [--json]\n"
        "          [--inject-fault SPEC ...] -- SCRIPT [ARGS]"
    )
    parser.add_argument(
        "script_argv",
        metavar="SCRIPT [ARGS]",
        nargs=argparse.REMAINDER,
        help="the script and its arguments, after `--`",
    )
    parser.add_argument(
        "--metric",
        choices=("loss", "variables"),
        default="loss",
        help="what a run is judged by: the loss the script fetches (every step, or only at "
        "the end), or the final trainable variables (default: loss)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        metavar="T",
        help="largest relative difference from the reference run that still matches "
        f"(default: {DEFAULT_TOLERANCES[kind]:g})",
    )
    parser.add_argument(
        "--out",
        type=path_arg,
        metavar="DIR",
        help="folder for the fix files, the trials and the state "
        f"(default: ./tf2npu-bisect-{kind})",
    )
    add_option_flag(parser, "every trial")
    parser.add_argument(
        "--clean",
        action="append",
        default=[],
        type=path_arg,
        metavar="DIR",
        help="remove DIR before every trial: the folder the script writes checkpoints to "
        "(model_dir, --output_dir), so no trial resumes from another's; repeat",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="stop a trial that runs longer than S seconds (it counts as failed; default: 3600 "
        "for the first trial, then 4x the first's time, at least 300)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys above)")
    parser.add_argument(
        "--inject-fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="a drill: every trial corrupts this fused node or op on purpose, as "
        "`tf2npu run --inject-fault SPEC` does (fusion:RULE[@ROOT]=KIND or op:NODE=KIND, KIND "
        f"nan, bias:EPS or scale:F); repeat for several; wins over {INJECT_FAULT_ENV}",
    )


def run(args: argparse.Namespace) -> int:
    if not getattr(args, "kind", None):
        raise UsageError(
            "give what to bisect: tf2npu bisect fusion -- SCRIPT, or tf2npu bisect precision "
            "-- SCRIPT (tf2npu bisect --help explains both)"
        )
    script, script_args = _script(args)
    _check_args(args)
    out: Path = (args.out or Path(f"tf2npu-bisect-{args.kind}")).resolve()
    check_output_dir(out, "--out")
    _check_clean(args.clean, script, out)
    with signals_stop_children():  # Ctrl-C, SIGTERM, SIGHUP stop the running trial too
        return _bisect(args, script, script_args, out)


def _script(args: argparse.Namespace) -> tuple[Path, tuple[str, ...]]:
    command = list(args.script_argv)
    if command[:1] == ["--"]:
        del command[0]
    example = f"tf2npu bisect {args.kind} -- train.py --steps 20"
    if not command:
        raise UsageError(f"no SCRIPT given; put it after `--`, e.g. {example}")
    script = checked_script(
        command[0],
        f"give the path of the training script, e.g. {example}",
        "bisect's options go before `--`, the script and its arguments after it",
    )
    return script, tuple(command[1:])


def _check_args(args: argparse.Namespace) -> None:
    from tf2npu.config.options import PRECISION_MODES
    from tf2npu.config.sources import from_cli
    from tf2npu.runtime.checks import check_option_files

    if args.tolerance is None:
        args.tolerance = DEFAULT_TOLERANCES[args.kind]
    tolerance: float = args.tolerance
    if not math.isfinite(tolerance) or tolerance <= 0:
        raise UsageError(
            f"--tolerance {tolerance:g}: give a relative difference > 0, e.g. --tolerance 0.01 (1%)"
        )
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout {args.timeout:g}: give seconds > 0, e.g. --timeout 600")
    values = from_cli(args.option)
    check_option_files(values)
    if args.inject_fault:
        from tf2npu.config.faults import parse_faults
        from tf2npu.graph.fusion import known_rules

        parse_faults(args.inject_fault, known_rules(), "--inject-fault")
    for key in _SELF_SET[args.kind]:
        if key in values:
            raise UsageError(
                f"--option {key}=...: bisect precision sets {key} in its trials; give the mode "
                f"to test with --mode (the reference is {REFERENCE_MODE})"
            )
    if args.kind == "precision":
        if args.mode not in PRECISION_MODES:
            from tf2npu.config.names import unknown

            raise unknown("precision_mode", args.mode, PRECISION_MODES)
        if args.mode == REFERENCE_MODE:
            raise UsageError(
                f"--mode {REFERENCE_MODE} is the reference itself; give the mode that trains "
                "worse, e.g. --mode allow_mix_precision"
            )


def _check_clean(folders: list[Path], script: Path, out: Path) -> None:
    """Each ``--clean`` folder is one the script writes, never one holding what must stay."""
    keep = {"SCRIPT": script, "--out": out, "the current folder": Path.cwd()}
    for folder in folders:
        path = folder.resolve()
        for what, kept in keep.items():
            inside_out = what == "--out" and kept in path.parents
            if kept == path or path in kept.parents or inside_out:
                raise UsageError(
                    f"--clean {str(folder)!r} would remove {what} ({kept}) before every "
                    "trial; give the folder the script writes its checkpoints to, e.g. "
                    "--clean /tmp/model_dir"
                )
        if path.exists() and not path.is_dir():
            raise UsageError(f"--clean {str(folder)!r} is a file; give a folder the script writes")


def _bisect(args: argparse.Namespace, script: Path, script_args: tuple[str, ...], out: Path) -> int:
    from tf2npu.debug.bisect.lab import ScriptLab
    from tf2npu.debug.bisect.metric import Metric, NoMetricError
    from tf2npu.debug.bisect.page import write_page
    from tf2npu.debug.bisect.report import text_lines
    from tf2npu.debug.bisect.search import Bench, Store
    from tf2npu.debug.trials import TrialTimeout
    from tf2npu.graph.fusion import known_rules

    metric = Metric(args.metric)
    identity: dict[str, Any] = {
        "kind": args.kind,
        "script": str(script),
        "args": list(script_args),
        "options": list(args.option),
    }
    if args.kind == "precision":
        identity["mode"] = args.mode
    clean = tuple(path.resolve() for path in args.clean)
    faults = _faults(args.inject_fault)
    if faults:  # a drill's trials are not a real bisection's: never resume one from the other
        identity["inject_fault"] = list(args.inject_fault) or [f.text for f in faults]
    lab = ScriptLab(
        script, script_args, tuple(args.option), metric, args.timeout, clean=clean, faults=faults
    )
    bench = Bench(lab, Store(out, identity), progress=lambda t: _progress(t, metric))
    print(f"tf2npu bisect: {TrialTimeout(args.timeout).describe()}", file=sys.stderr)
    known = known_rules()
    try:
        data = _search(args, bench, metric, out, known)
    except NoMetricError as err:
        raise UsageError(f"{err} (the trials are in {out})") from None
    data["page"] = str(write_page(data, bench, out))
    if args.json:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        print("\n".join(text_lines(data)))
    return exit_codes.OK if data["found"] else exit_codes.FINDINGS


def _faults(flags: list[str], env: dict[str, str] | None = None) -> tuple[FaultSpec, ...]:
    """The faults every trial runs with (none: a real bisection): the ``--inject-fault``
    flags, else an inherited ``TF2NPU_INJECT_FAULT``; said on stderr, since a drill's numbers
    are wrong on purpose and an inherited variable is easy to forget."""
    import os

    from tf2npu.config.faults import parse_faults
    from tf2npu.graph.fusion import known_rules

    inherited = (os.environ if env is None else env).get(INJECT_FAULT_ENV, "").strip()
    if flags:
        specs = ";".join(flags)
        note = f" (instead of the inherited {INJECT_FAULT_ENV}={inherited})" if inherited else ""
        print(
            f"tf2npu bisect: FAULT INJECTION: every trial runs with --inject-fault {specs}{note}",
            file=sys.stderr,
        )
        return parse_faults(flags, known_rules(), "--inject-fault")
    if inherited:
        print(
            f"tf2npu bisect: FAULT INJECTION: {INJECT_FAULT_ENV}={inherited} is set in the "
            "environment, so every trial corrupts these ops on purpose (a drill); unset it "
            f"(env -u {INJECT_FAULT_ENV} tf2npu bisect ...) for a real bisection",
            file=sys.stderr,
        )
        return parse_faults([inherited], known_rules(), INJECT_FAULT_ENV)
    return ()


def _search(
    args: argparse.Namespace,
    bench: Bench,
    metric: Metric,
    out: Path,
    known: KnownRules,
) -> dict[str, Any]:
    from tf2npu.debug.bisect import report as report
    from tf2npu.debug.bisect.fusion import bisect_fusion
    from tf2npu.debug.bisect.precision import bisect_precision

    if args.kind == "fusion":
        fusion = bisect_fusion(bench, metric, args.tolerance, tuple(known))
        files = report.write_fusion_files(fusion, out, known)
        return report.to_json(fusion, bench, files, metric, args.tolerance, known)
    precision = bisect_precision(bench, metric, args.tolerance, args.mode)
    files = report.write_precision_files(precision, out)
    return report.to_json(precision, bench, files, metric, args.tolerance, known)


def _progress(trial: Trial, metric: Metric) -> None:
    from tf2npu.debug.bisect.metric import headline

    value = headline(trial.evidence, metric)
    shown = "-" if value is None else f"{value:.6g}"
    state = "resumed" if trial.resumed else f"{trial.evidence.seconds:.1f}s"
    print(
        f"tf2npu bisect: {trial.folder.name}: exit {trial.evidence.status}, "
        f"{metric.value} {shown} ({state})",
        file=sys.stderr,
    )
