"""``tf2npu`` entry point: parse, dispatch, and turn user errors into messages and exit codes."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tf2npu import __version__, exit_codes
from tf2npu.errors import Tf2NpuError

COMMANDS = {
    "migrate": "rewrite TF 1.x scripts to the Ascend npu_bridge API, with a report set",
    "graph": "run the graph engine on a TF graph: placement, precision, fusions, GeOps",
    "run": "run a TF 1.15 training script (original or migrated) on TF 2.15, with a run summary",
    "compare": "compare two tensor dumps (NPU vs golden, or fusion on vs off) as msaccucmp does",
    "overflow": "list the first ops that overflowed in an overflow dump, and how to fix them",
    "verify": (
        "check that a migrated script trains like the original (loss per step, final variables)"
    ),
    "bisect": "find the fusion instance, or the ops that need float32, that break a training run",
    "doctor": "diagnose a failed run from its log, report folder or script: the cause and the fix",
    "profile": (
        "profile a TF 1.15 script's NPU sessions (msprof-style tables, timeline, advice, page)"
    ),
}
"""Subcommand name -> its one-line help. The command's module is ``tf2npu.cli.<name>``; it has
DESCRIPTION, EPILOG, add_arguments(parser) and run(args) -> int. Modules are imported only for
the commands a parser is built with, so ``tf2npu migrate`` does not pay for TF-side imports."""


DESCRIPTION = """\
tf2npu moves TensorFlow 1.x training scripts onto Huawei Ascend NPUs.

  tf2npu migrate SRC     rewrite scripts to the npu_bridge API and write a report set
  tf2npu graph inspect G run the graph engine on a graph file: device/host, casts, GeOps
  tf2npu run SCRIPT ...  run a TF 1.15 script (original or migrated) on TF 2.15, with a summary
  tf2npu compare A B     compare two tensor dumps as msaccucmp does; find the first divergent op
  tf2npu overflow DUMP   the first ops that overflowed in an overflow dump, and the fix
  tf2npu verify A B      check that migrated script B trains like original A
  tf2npu bisect K -- S   K = fusion: the fusion instance that breaks script S's training;
                         K = precision: the ops that must stay float32 in it
  tf2npu doctor LOG      diagnose a failed run from its log, run folder or script
  tf2npu profile -- S    profile a script's NPU sessions: msprof-style tables, timeline, advice

Run `tf2npu <command> --help` for what a command does, its options and examples;
`python -m tf2npu` is the same program.
Exit codes: 0 ok, 1 some file failed or a finding is at error level, 2 bad usage;
`tf2npu run` exits with the script's own exit status.
"""


def command_in(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first item that is not an option, if a command."""
    for item in argv:
        if item == "--" or not item.startswith("-"):
            return item if item in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with ``only``, just that command gets its options (and its import).

    The other commands are still listed (same top-level help, same "invalid choice" errors) but
    their modules are not imported.
    """
    parser = argparse.ArgumentParser(
        prog="tf2npu", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"tf2npu {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=help_text)
            continue
        command = importlib.import_module(f"tf2npu.cli.{name}")
        child = sub.add_parser(
            name,
            help=help_text,
            description=command.DESCRIPTION,
            epilog=command.EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(child)
        child.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    chosen = command_in(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=chosen)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return exit_codes.USAGE
    try:
        code: int = args.run(args)
    except Tf2NpuError as exc:
        context = "".join(f"\n  ({note})" for note in getattr(exc, "__notes__", ()))
        print(f"tf2npu {args.command}: error: {exc}{context}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP made procs.Terminated
        how = f" by {exc}" if str(exc) else ""
        print(f"tf2npu {args.command}: interrupted{how}", file=sys.stderr)
        return int(getattr(exc, "exit_code", exit_codes.INTERRUPTED))
    return code


if __name__ == "__main__":
    sys.exit(main())
