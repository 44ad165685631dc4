"""``tf2npu migrate``: rewrite TF 1.x scripts to the npu_bridge API and write a report set."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console

from tf2npu import exit_codes
from tf2npu.atomic import write_text_atomic
from tf2npu.cli.console import make_console
from tf2npu.errors import UsageError
from tf2npu.migrate.model import MigrationReport
from tf2npu.migrate.options import PRECISION_MODES, Distributed, LossScale, MigrateOptions
from tf2npu.migrate.plan import real
from tf2npu.migrate.report import FORMATS, parse_formats, write_reports
from tf2npu.migrate.report.plain import visible
from tf2npu.migrate.report.terminal import print_summary
from tf2npu.migrate.tree import Plan, WriteError, make_plan, migrate_tree, tasks
from tf2npu.migrate.walk import Kind

DESCRIPTION = """\
Rewrite TensorFlow 1.15 training scripts (Estimator, Sess.run, Keras, Horovod, TPUEstimator with
use_tpu=False) to the Ascend TF adapter API, keeping everything outside the edited spans
byte-for-byte (comments, blank lines, quotes, encodings, line endings), and analyse every TF and
Horovod API the scripts use against the Ascend support list.

SRC is a file or a folder (walked recursively). SRC is never modified unless --in-place is given.
Non-Python files are copied unchanged; a file that cannot be parsed (or is above 4 MiB) is
copied unchanged and reported as failed. Links are recreated, never followed; named pipes are
recreated and devices reported, never read. OUT, SRC and the report folder must not overlap.
Running the tool on its own output changes nothing.
"""
EPILOG = """\
examples:
  tf2npu migrate train.py                        # writes train_npu.py and train_npu_report/
  tf2npu migrate models/bert -o bert_npu         # a whole repository
  tf2npu migrate src/ -o out/ --precision-mode allow_mix_precision --loss-scale dynamic
  tf2npu migrate src/ -o out/ --distributed horovod --entry train.py
  tf2npu migrate src/ --in-place --backup        # rewrite in place, keep <file>.bak copies
  tf2npu migrate src/ -o out/ --diff | less      # review the changes as a unified diff

reports (in --report DIR, default <OUT>_report):
  summary.md          files migrated/unchanged/failed, changes per rule, API status counts
  changes.csv         every edit: file, line, col, rule, before, after
  findings.csv        what needs your attention, with the fix
  api_analysis.csv    every TF/Horovod API use with its Ascend support status (also .xlsx)
  report.json         all of the above, machine-readable (schema in docs/migration.md)

exit codes: 0 ok; 1 a file failed or a finding is at error level; 2 bad usage (nothing
written), or the output cannot be written at all (e.g. a full disk); 130 interrupted.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SRC", type=Path, help="a Python file or a folder")
    where = parser.add_argument_group("where results go")
    where.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output folder (or file, when SRC is a file: OUT/ or an existing folder gets "
        "OUT/SRC's name); default: SRC_npu",
    )
    where.add_argument(
        "--report", metavar="DIR", type=Path, help="report folder; default: OUT_report next to OUT"
    )
    where.add_argument("--in-place", action="store_true", help="rewrite SRC itself")
    where.add_argument(
        "--backup",
        action="store_true",
        help="with --in-place: keep each changed file's original as FILE.bak (FILE.bak.1, ... "
        "when that exists; the report names it)",
    )
    where.add_argument(
        "--force",
        action="store_true",
        help="write into an existing non-empty OUT (or over an existing file)",
    )
    where.add_argument(
        "--format",
        default=",".join(FORMATS),
        metavar="LIST",
        help=f"report formats, comma-separated from {','.join(FORMATS)} (default: all)",
    )
    where.add_argument(
        "--diff",
        action="store_true",
        help="print a unified diff of every change (also written as changes.diff)",
    )
    npu = parser.add_argument_group("NPU settings written into the migrated scripts")
    npu.add_argument(
        "--precision-mode",
        choices=PRECISION_MODES,
        metavar="MODE",
        help="precision_mode for every NPU config the tool creates or edits; one of "
        + ", ".join(PRECISION_MODES),
    )
    npu.add_argument(
        "--mix-compile",
        action="store_true",
        help="mix_compile_mode=True: ops the NPU cannot run stay on the host",
    )
    npu.add_argument(
        "--loss-scale",
        default="none",
        metavar="{none,fixed:N,dynamic}",
        help="wrap training optimizers in NPULossScaleOptimizer (default: none)",
    )
    npu.add_argument(
        "--distributed",
        default="auto",
        choices=[d.value for d in Distributed],
        help="auto: migrate Horovod where used; horovod / tf_strategy: migrate "
        "that style; none: only report (default: auto)",
    )
    npu.add_argument(
        "--keep-horovod-import",
        action="store_true",
        help="migrate Horovod uses but keep the Horovod import statements (the migrated "
        "scripts then still need Horovod installed)",
    )
    npu.add_argument(
        "--entry",
        metavar="FILE",
        type=Path,
        help="the entry script (where NPU resources are set up) when no file has "
        'an `if __name__ == "__main__":` block',
    )
    run = parser.add_argument_group("running")
    run.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                     help="migrate with up to N worker processes, at most one per file and "
                          "core (default: 1)")  # fmt: skip


def _output_path(source: Path, output: str | None) -> Path | None:
    """``-o OUT`` as a path: for a single file, ``OUT/`` (or an existing folder) means the file
    goes into that folder under its own name, as ``cp`` does."""
    if output is None:
        return None
    path = Path(output)
    into_folder = output.endswith(("/", os.sep)) or path.is_dir()
    if source.is_file() and into_folder:
        return path / source.name
    return path


def run(args: argparse.Namespace) -> int:
    formats = parse_formats(args.format)
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give a number of parallel workers >= 1")
    output = _output_path(args.source, args.output)
    plan = make_plan(args.source, output, args.report, in_place=args.in_place,
                     backup=args.backup, force=args.force)  # fmt: skip
    options = MigrateOptions(
        precision_mode=args.precision_mode,
        mix_compile=args.mix_compile,
        loss_scale=LossScale.parse(args.loss_scale),
        distributed=Distributed(args.distributed),
        entry=_entry(plan, args.entry),
        keep_horovod_import=args.keep_horovod_import,
    )
    console = make_console(stderr=True)
    report = _run_with_progress(plan, options, args, console)
    diffs = "".join(f.diff for f in report.files)
    _write_report_set(report, plan.report_dir, formats, diffs if args.diff else None)
    if args.diff:
        _print_diff(visible(diffs))
    print_summary(report, console, report_dir=plan.report_dir)
    return exit_codes.FINDINGS if report.failed else exit_codes.OK


def _print_diff(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader stopped early (`--diff | head`, quitting `less`): not an error. Point
        # stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _write_report_set(
    report: MigrationReport, folder: Path, formats: list[str], diffs: str | None
) -> None:
    try:
        write_reports(report, folder, formats)
        if diffs is not None:
            write_text_atomic(folder / "changes.diff", visible(diffs))
    except OSError as exc:
        raise WriteError(
            f"cannot write the report in --report {str(folder)!r}: "
            f"{exc.strerror or exc}; free some space or choose another folder with --report "
            "(the migrated files are written)"
        ) from None


def _entry(plan: Plan, entry: Path | None) -> str | None:
    if entry is None:
        return None
    root = plan.source.parent if plan.single_file else plan.source
    path = entry if entry.is_absolute() else (root / entry)
    if not path.exists():
        path = real(entry)
    path = real(path)
    if not path.is_file() or path.suffix != ".py":
        raise UsageError(f"--entry {str(entry)!r}: not a Python file inside SRC")
    if root not in path.parents:
        raise UsageError(f"--entry {str(entry)!r} is not inside SRC {str(root)!r}")
    return path.relative_to(root).as_posix()


def _run_with_progress(
    plan: Plan, options: MigrateOptions, args: argparse.Namespace, console: Console
) -> MigrationReport:
    if plan.single_file or not console.is_terminal:
        return migrate_tree(plan, options, jobs=args.jobs, diff=args.diff)
    # Only a terminal gets a progress bar: rich.progress is imported for it alone.
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    total = sum(1 for task in tasks(plan) if task.kind is not Kind.EMPTY_FOLDER)
    columns = (
        TextColumn("migrating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task("", total=total)

        def advance(rel: str) -> None:
            progress.update(bar, advance=1, description=rel[-40:])

        return migrate_tree(plan, options, jobs=args.jobs, diff=args.diff, progress=advance)
