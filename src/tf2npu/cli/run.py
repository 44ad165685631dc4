"""``tf2npu run``: run a TF 1.15-style training script on TF 2.15, then summarise what it did.

The script runs in this process, as ``python SCRIPT ARGS`` would run it (``__main__``, its own
``sys.argv`` and ``sys.path[0]``, its exit status), because the runtime can only reach the
sessions a script builds deep inside Estimator, Keras or its own code through process-wide
hooks: :func:`tf2npu.compat.activate` (``import tensorflow`` gives the TF1 API) and
:func:`tf2npu.runtime.install` (sessions carrying ``NpuOptimizer`` go through the graph engine).
What those sessions did is read back from :func:`tf2npu.runtime.run_stats` at exit.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.text import Text

from tf2npu import runtime
from tf2npu.artifacts.run_summary import (
    SUMMARY_FILE,
    DeterminismReport,
    DumpRecord,
    ProfileRecord,
    RunSummary,
)
from tf2npu.cli import paths, ranks
from tf2npu.cli.console import make_console
from tf2npu.cli.engine_flags import add_engine_flags, engine_overrides
from tf2npu.cli.npu_flags import add_option_flag, add_shorthands, cli_items
from tf2npu.cli.paths import check_output_dir, path_arg
from tf2npu.cli.precision_view import precision_summary_rows
from tf2npu.cli.script_argv import FLAGS_KEY, record_flags, warn_misplaced
from tf2npu.config.env import INJECT_FAULT_ENV
from tf2npu.config.overrides import EngineOverrides
from tf2npu.config.profiling import profile_options
from tf2npu.config.sources import (
    option_text,
)
from tf2npu.errors import UsageError
from tf2npu.runtime.checks import check_options
from tf2npu.runtime.job import RunSpec

DESCRIPTION = """\
Run a TensorFlow 1.15-style training script, original or migrated to npu_bridge, on the
installed TensorFlow 2.15, as `python SCRIPT ARGS` would run it, then print a run summary.

The script runs in a TF 1.15 environment: `import tensorflow as tf` gives the v1 API with v2
behaviour disabled (graph mode, tf.Session, tf.placeholder), common tf.contrib symbols resolve
to their TF 2.15 equivalents, and `npu_bridge` is importable (so is precision_tool's
tf_config when the script has no copy of precision_tool). Sessions whose config carries the
NpuOptimizer (npu_config_proto(), NPURunConfig, NPUEstimator, ...) run through tf2npu's graph
engine: ops are placed on the device or the host, the precision mode inserts casts, fusions
apply, device ops group into GeOps. Every other session stays a stock TensorFlow session.

Everything after SCRIPT is the script's own argv (sys.argv[1:]); tf2npu's options go before
SCRIPT. sys.argv[0] and __file__ are the script's absolute path, sys.path[0] its directory.
"""
EPILOG = """\
examples:
  tf2npu run train.py --epochs 1                  # arguments after SCRIPT go to the script
  tf2npu run --option precision_mode=allow_mix_precision train.py
  tf2npu run --precision-mode allow_mix_precision --mix-compile train.py
  tf2npu run --no-npu train.py                    # every session stock, to compare against
  tf2npu run --execution xla --report-dir runs/xla train.py
  tf2npu run --deterministic --record train.py    # reproducible; steps.jsonl, variables.npz
  tf2npu run --profile prof --profile-steps 1-5 train.py   # msprof-style profile + advice
  tf2npu run --inject-fault fusion:matmul_biasadd=scale:2 train.py   # a drill: corrupt a rule
  tf2npu run --ranks 2 train.py                   # two ranks, collectives over 127.0.0.1

run summary (on stderr, and as JSON in REPORT_DIR/run_summary.json, schema_version 1):
  sessions / stock_sessions   sessions that ran through the engine / stayed stock
  graphs_compiled             graph-engine runs (one per session per graph change)
  geops, host_ops             device clusters formed; ops placed on the host
  casts_inserted              casts the precision mode added
  fusions                     fusion rule -> times it fired
  steps                       training steps executed, in NPU and stock sessions
  nonfinite                   null, or {first_step, fetches}: scalar float fetches (a loss)
                              that were NaN/Inf, and the step they first were; a warning too
  loss_scale                  null, or {scale, skipped_steps, warmup} under
                              NPULossScaleOptimizer (warmup: the leading skipped steps)
  precision                   per user op the precision pass judged: {op, op_type (GE),
                              tf_type, dtype, reason, detail, where, graph}
  wall_seconds                how long the script ran
  options                     NpuOptimizer options the NPU sessions set (incl. --option)
  options_without_effect      those among them that change nothing off the device
  options_unknown             parameter_map keys that are no option (ignored, as the adapter
                              does; --strict-options makes them an error)
  exit_status                 the script's exit status
  job_environment             RANK_SIZE, RANK_ID, DEVICE_ID, ... set because they were unset
  dumps                       per dump folder: path, files written, tensor bytes, complete
  profiles                    per profile (--profile, profiling_mode): its PROF_* folder,
                              traced runs, advice findings by severity, complete
                              (docs/profile.md)
  deterministic               null, or {requested_by, reproducible, op_determinism, schedule,
                              problems}: --deterministic / deterministic=1, the schedule it
                              fixed ("the caller's thread") and what keeps the run from being
                              reproducible (oneDNN on at import, no seed)
  fusion_instances_unmatched  entries of --fusion-instances that no compile had ({rule[, root]})
  injected_faults             per --inject-fault spec: {spec, applied_to: [nodes corrupted]}
  races                       per variable read and assigned in one run with nothing ordering
                              them: {variable, read, read_op, read_at, write, write_op,
                              write_at, message, fix} (docs/run.md, "Variable races")
  write_errors                what could not be written at the end (a full disk); exit 1
  distributed                 in a multi-rank job: rank, size, last training loss, and per
                              HCCL op the collectives run and the bytes they reduced or sent
Without --report-dir it goes to ./tf2npu-run, and the summary says so.
TensorFlow's own log lines (start-up notices, INFO and deprecation lines of library code) are
hidden unless --verbose; the script's own log lines stay. `python -m tf2npu run ...` works the
same. Details: docs/run.md.

exit codes: the script's exit status (0 ok, sys.exit(N) -> N, an uncaught exception -> 1,
Ctrl-C -> 130); 2 bad usage before the script ran: a missing, unreadable or non-regular
SCRIPT, a bad --option or option file, a bad AOE_MODE, an unwritable --report-dir; also 2,
with one message at the script's line and no traceback, when the script's own NPU config is
invalid (an option value, a missing fusion_switch_file) and the script does not catch it.
"""

DEFAULT_REPORT_DIR = Path("tf2npu-run")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # One REMAINDER positional, not SCRIPT + REMAINDER: argparse would drop a `--` right after
    # SCRIPT, and the script must see its arguments exactly as typed.
    parser.usage = (
        "%(prog)s [-h] [--option KEY=VALUE] [--precision-mode MODE] [--mix-compile]\n"
        "                  [--fusion-switch-file FILE] [--modify-mixlist FILE]\n"
        "                  [--no-npu] [--execution {host,xla}] [--strict-options]\n"
        "                  [--fusion-instances FILE] [--keep-fp32 FILE] [--inject-fault SPEC]\n"
        "                  [--dump DIR [--dump-step STEPS] [--dump-mode MODE] [--dump-data D]]\n"
        "                  [--profile DIR [--profile-steps STEPS]]\n"
        "                  [--deterministic] [--record] [--export-graph DIR]\n"
        "                  [--ranks N] [--rank-table FILE] [--job-timeout S] [--grace S]\n"
        "                  [--report-dir DIR] [--quiet] [--verbose] SCRIPT [ARGS ...]"
    )
    parser.add_argument(
        "script_argv",
        metavar="SCRIPT [ARGS]",
        nargs=argparse.REMAINDER,
        help="the Python script to run, then its arguments, passed on untouched as its "
        "sys.argv[1:] (a `--` before SCRIPT ends tf2npu's options)",
    )
    npu = parser.add_argument_group("NPU sessions (options go before SCRIPT)")
    add_option_flag(npu, "every NPU session")
    add_shorthands(npu)
    npu.add_argument(
        "--no-npu",
        action="store_true",
        help="run every session stock, NpuOptimizer or not, to compare against an NPU run",
    )
    npu.add_argument(
        "--execution",
        choices=runtime.EXECUTION_MODES,
        default=runtime.DEFAULT_EXECUTION,
        help="how GeOps execute: host = TensorFlow's CPU kernels; xla = each GeOp compiled as "
        "one XLA cluster (default: host)",
    )
    npu.add_argument(
        "--strict-options",
        action="store_true",
        help="an NpuOptimizer parameter_map key that is no option is an error; by default it "
        "is ignored as the adapter ignores it, with a warning and options_unknown in the summary",
    )
    add_engine_flags(parser)
    dump = parser.add_argument_group(
        "tensor dumps (docs/debugging.md; compare two dumps with tf2npu compare)"
    )
    dump.add_argument(
        "--dump",
        metavar="DIR",
        type=path_arg,
        help="dump tensors into DIR (created): for NPU sessions, enable_dump=true "
        "dump_path=DIR in the device layout; with --no-npu, the golden dump of every op's "
        "outputs (DIR/RUN/STEP/OP.INDEX.TIMESTAMP.npy)",
    )
    dump.add_argument(
        "--dump-step",
        metavar="STEPS",
        help='dump_step: which runs to dump, e.g. "0|5|10-20" (default: every run)',
    )
    dump.add_argument(
        "--dump-mode",
        choices=("input", "output", "all"),
        help="dump_mode: inputs, outputs or both of each op (NPU dumps; default output)",
    )
    dump.add_argument(
        "--dump-data",
        choices=("tensor", "stats"),
        help="dump_data: .npy tensors, or one CSV of statistics per op (NPU dumps; default tensor)",
    )
    repro = parser.add_argument_group("reproducible runs and run records (docs/verify.md)")
    repro.add_argument(
        "--deterministic",
        action="store_true",
        help="run-to-run reproducible CPU execution: TF_ENABLE_ONEDNN_OPTS=0 before TensorFlow "
        "is imported, TF's op determinism in every session (stock ones too), and "
        "--option deterministic=1; the script must set a random seed before it builds the model",
    )
    repro.add_argument(
        "--record",
        action="store_true",
        help="write steps.jsonl (fetched float scalars per run), steps.html (them drawn) and "
        "variables.npz (trainable variables at the end) to the report folder; TF2NPU_RECORD=1",
    )
    repro.add_argument(
        "--export-graph",
        metavar="DIR",
        type=path_arg,
        help="write each NPU session's graph as DIR/session_N.pb, the file `tf2npu graph "
        "inspect` reads (no export_meta_graph in the script needed)",
    )
    prof = parser.add_argument_group(
        "profiling (docs/profile.md; tf2npu profile runs and analyses)"
    )
    prof.add_argument(
        "--profile",
        metavar="DIR",
        type=path_arg,
        help="profile the NPU sessions into DIR/PROF_<time>/ (profiling_mode=true, "
        'profiling_options={"output": DIR}): msprof-style op_summary/op_statistic/step_trace '
        "CSVs, trace_view.json, advice.md and profile.html",
    )
    prof.add_argument(
        "--profile-steps",
        metavar="STEPS",
        help='which runs of each run signature to trace, dump_step syntax, e.g. "0-9" '
        "(default: every run; tracing slows a run down)",
    )
    ranks.add_arguments(parser)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--report-dir",
        metavar="DIR",
        type=path_arg,
        default=DEFAULT_REPORT_DIR,
        help=f"where {SUMMARY_FILE} and run artifacts go; created (default: ./tf2npu-run)",
    )
    out.add_argument(
        "--quiet",
        action="store_true",
        help=f"print no summary on stderr ({SUMMARY_FILE} is still written)",
    )
    out.add_argument(
        "--verbose",
        action="store_true",
        help="keep TensorFlow's own log lines (start-up notices, INFO lines and deprecation "
        "notices of library code), hidden otherwise",
    )
    record_flags(parser)


def run(args: argparse.Namespace) -> int:
    """Check the command line, run it (:func:`tf2npu.runtime.job.run`), print the summary."""
    spec = make_spec(args)
    if ranks.is_multi_rank(args):
        check_output_dir(args.report_dir, "--report-dir")
        return ranks.run_ranks(args, spec)
    outputs = {"--report-dir": args.report_dir, "--dump": args.dump, "--profile": args.profile}
    outputs["--export-graph"] = args.export_graph
    default = args.report_dir == DEFAULT_REPORT_DIR
    return run_spec(spec, _flags(args), outputs, default_report_dir=default)


def run_spec(
    spec: RunSpec,
    flags: Mapping[str, str],
    outputs: Mapping[str, Path | None],
    *,
    default_report_dir: bool = False,
) -> int:
    """Check what ``spec`` will use before anything runs (option values, the files options
    name, the environment, the output folders ``outputs`` names by flag, as the user spelled
    them), run it in this process and print its summary; the exit status. ``flags`` says how
    the user spelled each option set by a flag (for the error messages)."""
    from tf2npu.runtime import job

    check_options(spec.options, os.environ, flags)
    for flag, folder in outputs.items():
        if folder is not None:
            check_output_dir(folder, flag)
    outcome = job.run(spec)
    if not spec.quiet:
        console = make_console(stderr=True)
        print_summary(outcome.summary, console, plan=spec, json_path=outcome.summary_path)
        if default_report_dir:
            _name_default_report_dir(console)
    return outcome.exit_code


def make_spec(args: argparse.Namespace) -> RunSpec:
    """The run the command line asks for: SCRIPT checked, paths settled, engine overrides
    loaded; raise :class:`UsageError` (or ``ConfigError``) on a problem."""
    from tf2npu.runtime.determinism import NPU_OPTION
    from tf2npu.runtime.dropout import dropout_off_from_env
    from tf2npu.runtime.record import max_steps_from_env, record_from_env

    command = list(args.script_argv)
    if command[:1] == ["--"]:
        del command[0]
    elif command:
        warn_misplaced("tf2npu run", command[0], command[1:], getattr(args, FLAGS_KEY, ()))
    if not command:
        raise UsageError("no SCRIPT given; e.g. tf2npu run train.py --epochs 1")
    script = checked_script(command[0])
    npu = not args.no_npu
    if not npu and args.profile is not None:
        raise UsageError(
            "--profile profiles NPU sessions (what the graph engine placed, cast and fused); "
            "drop --no-npu"
        )
    if not npu and args.dump is not None and (args.dump_mode or args.dump_data):
        raise UsageError(
            "--dump-mode and --dump-data apply to NPU dumps; a --no-npu (golden) dump holds "
            "every op's outputs as tensors (an op's inputs are its producers' outputs)"
        )
    spec = RunSpec(
        script=script,
        script_args=tuple(command[1:]),
        report_dir=args.report_dir.resolve(),
        options=tuple(cli_items(args))
        + (_dump_options(args) + _profile_options(args) if npu else ())
        + ((NPU_OPTION,) if npu and args.deterministic else ()),
        npu=npu,
        execution=args.execution,
        strict_options=args.strict_options,
        golden_dump=None if npu or args.dump is None else args.dump.resolve(),
        dump_step=args.dump_step or "",
        profile=args.profile.resolve() if args.profile is not None else None,
        profile_steps=args.profile_steps or "",
        deterministic=args.deterministic,
        record=args.record or record_from_env(os.environ),
        max_steps=max_steps_from_env(os.environ),
        dropout_off=dropout_off_from_env(os.environ),
        export_graph=args.export_graph.resolve() if args.export_graph is not None else None,
        verbose=args.verbose,
        quiet=args.quiet,
    )
    return replace(spec, engine=_engine_overrides(args, spec))


def checked_script(given: str) -> Path:
    """``tf2npu run``'s SCRIPT as an absolute path, once it is an existing ``.py`` file."""
    return paths.checked_script(
        given,
        "give the path of the Python training script, e.g. tf2npu run train.py --epochs 1",
        "tf2npu run runs Python scripts (options for tf2npu go before SCRIPT, the script's "
        "arguments after it)",
    )


def _engine_overrides(args: argparse.Namespace, plan: RunSpec) -> EngineOverrides:
    """The trial flags (or their variables), checked; faults are dropped under ``--no-npu``."""
    engine = engine_overrides(args, os.environ)
    if plan.npu or not engine.faults:
        return engine
    if args.inject_fault:
        raise UsageError(
            "--inject-fault corrupts NPU sessions only, and --no-npu makes every session "
            "stock; drop --no-npu to run the drill (or drop --inject-fault)"
        )
    print(
        f"tf2npu run: {INJECT_FAULT_ENV} ignored: --no-npu runs stock sessions, which faults "
        "never touch",
        file=sys.stderr,
    )
    return replace(engine, faults=())


def _dump_options(args: argparse.Namespace) -> tuple[str, ...]:
    """``--dump DIR`` and its companions as the NpuOptimizer options they stand for."""
    given = {
        "--dump-step": args.dump_step,
        "--dump-mode": args.dump_mode,
        "--dump-data": args.dump_data,
    }
    if args.dump is None:
        flags = [flag for flag, value in given.items() if value is not None]
        if flags:
            raise UsageError(f"{', '.join(flags)} needs --dump DIR (the folder to dump into)")
        return ()
    items = ["enable_dump=true", f"dump_path={args.dump.resolve()}"]
    for flag, value in given.items():
        if value is not None:
            items.append(f"{flag[2:].replace('-', '_')}={value}")
    return tuple(items)


def _profile_options(args: argparse.Namespace) -> tuple[str, ...]:
    """``--profile DIR`` as the NpuOptimizer options it stands for (``--profile-steps`` is
    checked here: it selects runs, which no adapter option does)."""
    from tf2npu.config.dump_steps import check

    if args.profile is None:
        if args.profile_steps is not None:
            raise UsageError("--profile-steps needs --profile DIR (the folder to profile into)")
        return ()
    if args.profile_steps is not None:
        fix = check(args.profile_steps)
        if fix is not None:
            raise UsageError(f"--profile-steps {args.profile_steps!r} is not valid; {fix}")
    return profile_options(args.profile.resolve())


def _flags(args: argparse.Namespace) -> dict[str, str]:
    """How the user spelled each option they set by a flag rather than ``--option``."""
    from tf2npu.cli.npu_flags import SHORTHANDS

    flags = {
        key: flag
        for attr, key, flag in SHORTHANDS
        if getattr(args, attr, None) not in (None, False)
    }
    for flag in ("--dump-step", "--dump-mode", "--dump-data"):
        if getattr(args, flag[2:].replace("-", "_"), None) is not None:
            flags[flag[2:].replace("-", "_")] = flag
    return flags


def _name_default_report_dir(console: Console) -> None:
    """Say where files went when the user did not choose: ``./tf2npu-run`` surprises."""
    console.print(
        Text.assemble(
            ("Report folder: ", "bold"),
            f"./{DEFAULT_REPORT_DIR} (the default; choose another with --report-dir DIR)",
        ),
        soft_wrap=True,
    )


# -- the summary ----------------------------------------------------------------------------------


def print_summary(summary: RunSummary, console: Console, *, plan: RunSpec, json_path: Path) -> None:
    """The compact two-column table printed at exit; every value is :class:`Text`, never markup.

    Plain aligned lines rather than a :class:`rich.table.Table`: a table pads every row to its
    widest cell, which leaves trailing blanks in a captured log.
    """
    sys.stdout.flush()
    status = summary.exit_status
    headline = Text.assemble(("tf2npu run", "bold"), f" {plan.script.name}: exit status ")
    headline.append(str(status), style="green" if status == 0 else "bold red")
    console.print(headline)
    rows = _rows(summary, plan)
    width = max(len(label) for label, _ in rows) + 2
    for label, value in rows:
        # Wrapped by hand so a long value continues under itself, not under the labels.
        for index, line in enumerate(value.wrap(console, max(20, console.width - width))):
            line.rstrip()
            console.print(Text.assemble((("" if index else label).ljust(width), "bold"), line))
    # soft_wrap: the path stays one piece to copy, however narrow the terminal.
    console.print(Text.assemble(("Summary: ", "bold"), str(json_path)), soft_wrap=True)


def _rows(summary: RunSummary, plan: RunSpec) -> list[tuple[str, Text]]:
    mode = f"execution {plan.execution}" if plan.npu else "--no-npu: every session stock"
    options = (f"{k}={option_text(v)}" for k, v in summary.options.items())
    rows = [
        ("sessions", Text(f"{summary.sessions} NPU, {summary.stock_sessions} stock")),
        ("mode", Text(mode)),
        ("graphs compiled", Text(str(summary.graphs_compiled))),
        ("GeOps", Text(str(summary.geops))),
        ("host ops", Text(str(summary.host_ops))),
        ("casts inserted", Text(str(summary.casts_inserted))),
        ("fusions", Text(_listing(f"{rule} x{n}" for rule, n in summary.fusions.items()))),
        ("steps", Text(str(summary.steps))),
        *precision_summary_rows(summary),
        *_failure_rows(summary),
        *_determinism_rows(summary.deterministic),
        *_override_rows(summary),
        *_fault_rows(summary),
        ("wall time", Text(f"{summary.wall_seconds:.2f} s")),
        ("options", Text(_listing(options))),
        ("without effect here", Text(_listing(summary.options_without_effect))),
        ("unknown, ignored", Text(_listing(summary.options_unknown))),
        *(("dump", Text(_dump_text(d))) for d in summary.dumps),
        *(("profile", Text(_profile_text(p))) for p in summary.profiles),
    ]
    record = summary.record
    if record is not None:
        rows.append(("record", Text(f"{record.steps}; drawn in {record.page}")))
    if plan.options and (not plan.npu or not summary.sessions):
        why = "--no-npu" if not plan.npu else "no NPU session was created"
        unused = f"{', '.join(plan.options)} ({why})"
        rows.append(("--option unused", Text(unused, style="yellow")))
    return rows


def _dump_text(dump: DumpRecord) -> str:
    text = f"{dump.files} files, {dump.bytes / 1e6:.1f} MB of tensors in {dump.path}"
    return f"{text}; statistics by {dump.statistics}" if dump.statistics else text


def _profile_text(profile: ProfileRecord) -> str:
    if not profile.complete:
        return f"{profile.traced_runs} traced runs, not analysed: {profile.path} (error above)"
    findings = ", ".join(f"{n} {s}" for s, n in profile.findings.items()) or "no advice"
    return f"{profile.traced_runs} traced runs, {findings}: {profile.path}/profile.html"


def _failure_rows(summary: RunSummary) -> list[tuple[str, Text]]:
    """Non-finite fetches (always shown, so "none" is a checked fact) and loss scaling."""
    nonfinite = summary.nonfinite
    if nonfinite is None:
        rows = [("non-finite values", Text("none"))]
    else:
        text = f"{_listing(nonfinite.fetches)}, first at step {nonfinite.first_step}"
        rows = [("non-finite values", Text(text, style="bold yellow"))]
    scale = summary.loss_scale
    if scale is not None:
        skipped, warmup = scale.skipped_after_warmup, scale.warmup
        value = "unknown" if scale.scale is None else f"{scale.scale:g}"
        text = f"scale {value}, {_steps(skipped)} skipped"
        if warmup is not None:
            text += f" after a warm-up of {_steps(warmup.skipped_steps)} (scale coming down)"
        rows.append(("loss scaling", Text(text, style="yellow" if skipped else "")))
    return rows


def _steps(count: int) -> str:
    return f"{count} step{'' if count == 1 else 's'}"


def _determinism_rows(state: DeterminismReport | None) -> list[tuple[str, Text]]:
    """``deterministic  yes`` or ``no: <why>``: never a claim the run cannot back."""
    if state is None:
        return []
    if state.reproducible:
        how = "; ".join(filter(None, (state.requested_by, state.schedule)))
        return [("deterministic", Text(f"yes ({how})"))]
    why = "; ".join(state.problems) or "op determinism is off"
    return [("deterministic", Text(f"no: {why}", style="bold yellow"))]


def _override_rows(summary: RunSummary) -> list[tuple[str, Text]]:
    """Entries of a trial's instance file that switched nothing off (not an error: a trial's
    graph may differ from the run that listed the instances)."""
    unmatched = summary.fusion_instances_unmatched
    if not unmatched:
        return []
    text = f"{_listing(u.describe() for u in unmatched)} (no compile had such an instance)"
    return [("instances off, unmatched", Text(text, style="yellow"))]


def _fault_rows(summary: RunSummary) -> list[tuple[str, Text]]:
    """One red row per fault spec of a drill: what it corrupted, or that it hit nothing."""
    rows = []
    for fault in summary.injected_faults:
        hit = fault.applied_to
        text = f"{fault.spec} -> {_listing(hit)}" if hit else f"{fault.spec} -> hit nothing"
        rows.append(("FAULT INJECTED", Text(text, style="bold red")))
    return rows


def _listing(items: Iterable[str]) -> str:
    return ", ".join(items) or "none"
