"""``tf2npu verify``: check that a migrated script trains like the original (runs four trials)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console
from rich.text import Text

from tf2npu import exit_codes
from tf2npu.cli.console import make_console
from tf2npu.cli.npu_flags import add_option_flag
from tf2npu.cli.paths import check_input_file, check_output_dir, path_arg
from tf2npu.debug.verify.checks import (
    PRECISION_TOLERANCE,
    Check,
    VerifyPlan,
    report_json,
    run_verify,
    write_report,
)
from tf2npu.debug.verify.page import write_page
from tf2npu.errors import UsageError
from tf2npu.procs import signals_stop_children
from tf2npu.runtime.checks import check_options

DESCRIPTION = """\
Run the ORIGINAL script and its MIGRATED version and check that they train alike.

Four recorded runs (each `tf2npu run --record` in a fresh process, two at a time):
  original-1, original-2   the original with stock sessions (--no-npu), twice: how far two
                           runs of it differ is its noise floor
  keep-origin-dtype        the migrated script through the adapter with
                           precision_mode=must_keep_origin_dtype: placement, fusions and NPU ops
                           but no dtype change. Must match within max(1e-5, 2 x noise floor)
                           relative (1e-5 when the runs are deterministic)
  precision-mode           the migrated script in its own precision mode (or --option
                           precision_mode=...): float16 rounding allowed, |x-y| <= 2% max(|y|, m),
                           m the scalar's median magnitude over the original's steps

Each check compares every float scalar the scripts fetch per training step (the loss they
print) and the trainable variables at the end, and names the first step and the first variable
that diverge. Both scripts must set a random seed (tf.set_random_seed, RunConfig
tf_random_seed) so their initial values agree.
"""
EPILOG = """\
examples:
  tf2npu migrate train.py -o npu/train.py             # the migrated copy
  tf2npu verify train.py npu/train.py --steps 20 -- --batch-size 32
  tf2npu verify train.py npu/train.py --option precision_mode=allow_mix_precision
  tf2npu verify train.py npu/train.py --dropout-off --json > verify.json
  tf2npu verify train.py npu/train.py -- --model-dir '{run_dir}/model'
                                # {run_dir}: each run's own folder, so no run resumes
                                # from a checkpoint another one wrote

output: a verdict per check; DIR/verify.json (default ./tf2npu-verify) with "verdict" (pass,
fail or inconclusive) and "checks": [{name, passed, first_divergent_step, first_divergent_variable,
max_rel_diff, tolerance, noise_floor, ...}]; DIR/verify.html, one self-contained page: every
fetched scalar per step for each run, its relative difference from original-1 (noise floor
shaded, first divergence marked), the variables that differ; each run's report folder
(run_summary.json, steps.jsonl, steps.html, variables.npz, trial.log) under DIR.
Details: docs/verify.md.

dropout: the original's tf.nn.dropout and the migration's npu_ops.dropout draw different
masks, so losses differ whatever the migration; verify says so and --dropout-off runs both
scripts with every dropout keeping every element (keep_prob=1 / rate=0).

keep_origin_dtype failing: verify runs the migrated script once more with every fusion off and
says "fusion rounding: X; with fusions off: Y" (the check then passes, cause fusion_rounding),
names a fusion that changes the result, or the real divergence; a variable race any run named
(tf2npu run's [variable_race] warning) is named in the checks it can explain.

exit codes: 0 every check passed, 1 a check failed, 2 bad usage (a missing script, a bad
--option, an original that fails or fetches nothing), 3 inconclusive: the original's runs do
not repeat (noise floor above 1e-5), so a check passed only within a tolerance widened to
that noise.
"""
DEFAULT_OUT = Path("tf2npu-verify")


class _OptionsParser(argparse.ArgumentParser):
    """Parses the options given after MIGRATED; errors are usage errors (exit 2)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}; see tf2npu verify --help")


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--steps",
        type=int,
        metavar="N",
        help="stop each run after N training steps (TF2NPU_MAX_STEPS); default: the script's",
    )
    add_option_flag(
        parser,
        "the migrated runs",
        "precision_mode=MODE sets the mode of the precision check (default: the script's own)",
    )
    parser.add_argument(
        "--deterministic",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run every trial with tf2npu run --deterministic (default: on)",
    )
    parser.add_argument(
        "--dropout-off",
        action="store_true",
        default=None,
        help="switch every dropout off in both scripts (TF2NPU_DROPOUT_OFF=1)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        metavar="RTOL",
        help=f"relative tolerance of the precision-mode check (default {PRECISION_TOLERANCE})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="per run (default: 3600 for the originals, then 4x their time, at least 300)",
    )
    parser.add_argument("--out", type=path_arg, metavar="DIR", help="where runs and verify.json go")
    parser.add_argument("--json", action="store_true", default=None, help="print verify.json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "%(prog)s ORIGINAL MIGRATED [--steps N] [--option KEY=VALUE ...]\n"
        "                     [--deterministic | --no-deterministic] [--dropout-off]\n"
        "                     [--tolerance RTOL] [--timeout SECONDS] [--out DIR] [--json]\n"
        "                     [-- SCRIPT_ARGS ...]"
    )
    # One REMAINDER positional takes ORIGINAL, MIGRATED and everything after them, `--`
    # included: with two positionals of their own, argparse lets MIGRATED swallow the `--` that
    # follows it, and the script arguments after it were read as verify's options.
    parser.add_argument(
        "rest",
        metavar="ORIGINAL MIGRATED [-- SCRIPT_ARGS]",
        nargs=argparse.REMAINDER,
        help="the original TF 1.15 script, its migrated version, options, then `--` and the "
        "arguments both scripts get",
    )
    _add_options(parser)


def _split(args: argparse.Namespace) -> list[str]:
    """Parse ORIGINAL, MIGRATED and the options given among or after them into ``args``;
    returns the script arguments (everything after the first ``--``)."""
    rest = list(args.rest)
    cut = rest.index("--") if "--" in rest else len(rest)
    options, script_args = rest[:cut], rest[cut + 1 :]
    parser = _OptionsParser(prog="tf2npu verify", add_help=False)
    parser.add_argument("original", metavar="ORIGINAL")
    parser.add_argument("migrated", metavar="MIGRATED")
    _add_options(parser)
    given = parser.parse_args(options)
    for key, value in vars(given).items():
        if key == "option" and value is not None:
            value = [*(args.option or ()), *value]  # --option before ORIGINAL counts too
        if value is not None:
            setattr(args, key, value)
    return script_args


def make_plan(args: argparse.Namespace) -> VerifyPlan:
    """The checked command line (raises :class:`UsageError`)."""
    script_args = _split(args)
    scripts = []
    for label, value in (("ORIGINAL", args.original), ("MIGRATED", args.migrated)):
        path = Path(value)
        fix = (
            f"give the path of the {label.lower()} script, e.g. tf2npu verify train.py npu/train.py"
        )
        if not path.exists():
            raise UsageError(f"{label} {value!r} does not exist; {fix}")
        check_input_file(path, label, fix)
        scripts.append(path.resolve())
    if args.steps is not None and args.steps < 1:
        raise UsageError(f"--steps {args.steps}: give a number of training steps >= 1, e.g. 20")
    if args.tolerance is not None and not 0 < args.tolerance < 1:
        raise UsageError(f"--tolerance {args.tolerance}: give a relative tolerance, e.g. 0.02")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout {args.timeout:g}: give seconds > 0, e.g. --timeout 600")
    options = tuple(args.option or ())
    # A bad KEY=VALUE, value or option file is an error now, not in every trial after the
    # originals ran; the trials' children check their specs again (runtime.job.main).
    check_options(options, os.environ)
    out = args.out or DEFAULT_OUT
    check_output_dir(out, "--out")
    return VerifyPlan(
        original=scripts[0],
        migrated=scripts[1],
        out=out.resolve(),
        script_args=tuple(script_args),
        options=options,
        steps=args.steps,
        deterministic=args.deterministic is not False,
        dropout_off=bool(args.dropout_off),
        rtol=args.tolerance if args.tolerance is not None else PRECISION_TOLERANCE,
        timeout=args.timeout,
    )


def run(args: argparse.Namespace) -> int:
    plan = make_plan(args)
    console = make_console(stderr=True)
    with signals_stop_children():  # Ctrl-C, SIGTERM, SIGHUP stop the running trials too
        checks, runs = run_verify(
            plan, progress=lambda text: console.print(Text(text), style="dim")
        )
    report = report_json(checks, runs, plan)
    path = write_report(report, plan.out)
    page = write_page(checks, runs, plan)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_checks(checks, report["verdict"], make_console(stderr=False), path, page)
    codes = {"pass": exit_codes.OK, "inconclusive": exit_codes.INCONCLUSIVE}
    return codes.get(report["verdict"], exit_codes.FINDINGS)


def print_checks(
    checks: Sequence[Check], verdict: str, console: Console, path: Path, page: Path | None = None
) -> None:
    """One line per check, then its notes; the verdict first; then the files written."""
    sys.stderr.flush()
    style = {"pass": "bold green", "inconclusive": "bold yellow"}.get(verdict, "bold red")
    console.print(Text.assemble(("tf2npu verify: ", "bold"), (verdict.upper(), style)))
    for check in checks:
        console.print(_line(check), soft_wrap=True)
        data = check.to_json()
        for note in data["notes"]:
            console.print(Text(f"    note: {note}", style="yellow"), soft_wrap=True)
    console.print(Text.assemble(("verify.json: ", "bold"), str(path)), soft_wrap=True)
    if page is not None:
        console.print(Text.assemble(("verify.html: ", "bold"), str(page)), soft_wrap=True)


def _line(check: Check) -> Text:
    data = check.to_json()
    if check.name == "original_noise":
        mark, text = "  --  ", f"noise floor {_fmt(data['noise_floor'])} (two original runs)"
    else:
        mark = " ??  " if check.inconclusive else "  ok  " if check.passed else " FAIL "
        if data["steps_compared"]:
            text = f"max rel diff {_fmt(data['max_rel_diff'])} "
        else:
            text = "no scalar compared "
        text += f"(tolerance {_fmt(data['tolerance'])})"
        text += f", variables {_fmt(data['max_rel_diff_variables'])}"
        if data["first_divergent_step"] is not None:
            scalar = data["first_divergent_scalar"]
            text += f"; first divergent step {data['first_divergent_step']}"
            text += f" ({scalar})" if scalar else ""
        if data["first_divergent_variable"] is not None:
            text += f"; first divergent variable {data['first_divergent_variable']}"
        if check.name == "precision_mode":
            text += f"; {check.precision_mode}"
        if check.cause:
            text += f"; cause: {check.cause.replace('_', ' ')}"
    style = "" if check.passed else "bold red"
    return Text.assemble((mark, style), (f"{check.name:<18} ", "bold"), text)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return "-" if value is None else str(value)
