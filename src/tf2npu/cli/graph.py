"""``tf2npu graph inspect``: run the graph engine on a graph file and report what it decided."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from tf2npu import exit_codes
from tf2npu.atomic import write_text_atomic
from tf2npu.cli.console import make_console
from tf2npu.cli.graph_limits import check_function_depth
from tf2npu.cli.npu_flags import add_option_flag, add_shorthands, cli_items
from tf2npu.cli.paths import check_input_file, check_output_dir, check_output_file, path_arg
from tf2npu.config.options import NpuOptions
from tf2npu.config.sources import from_cli, from_json_file, resolve
from tf2npu.errors import UsageError
from tf2npu.runtime.checks import check_option_files

if TYPE_CHECKING:
    from tf2npu.graph.ir import Graph

DESCRIPTION = """\
Run tf2npu's graph engine (the pass pipeline that re-implements the Ascend adapter's graph
rewriting) over a TF 1.x graph file and report what it decided: which nodes run on the NPU and
in which GeOps, which stay on the host and why, the casts the precision mode inserts, the
fusions applied, and the errors and warnings found.

  tf2npu graph inspect GRAPH     summary on the terminal, --json, --html, --dump-dir
"""
EPILOG = "Run `tf2npu graph inspect --help` for the options. Details: docs/graph-inspect.md."

INSPECT_DESCRIPTION = """\
Run the graph engine over GRAPH (.pb binary GraphDef, .pbtxt text GraphDef, or .meta
MetaGraphDef) under the given NpuOptimizer options, then print a summary: node counts on the
device and the host, GeOps, host ops grouped by reason, casts, fusions, errors and warnings,
options that have no effect here, and seconds per pass.

Options come from, lowest precedence first: --config-from, --option KEY=VALUE, the shorthand
flags (--precision-mode, --mix-compile, --fusion-switch-file, --modify-mixlist). The environment
is read as the adapter reads it (PRINT_MODEL=1 writes BeforeSubGraph_<n>.pbtxt and
AfterSubGraph_*.pbtxt into --dump-dir, else into the current directory).
"""
INSPECT_EPILOG = """\
examples:
  tf2npu graph inspect model.pbtxt
  tf2npu graph inspect model.meta --mix-compile --precision-mode allow_mix_precision
  tf2npu graph inspect model.pb --config-from npu_options.json --json > decisions.json
  tf2npu graph inspect model.pbtxt --html partition.html --dump-dir dumps/

--config-from FILE holds one JSON object of NpuOptimizer parameter_map keys to values, typed as
the option is (bool: true/false, int: a number, string: a string):
  {"precision_mode": "allow_mix_precision", "mix_compile_mode": true, "iterations_per_loop": 1}

--dump-dir DIR receives: NN_<pass>_before.pbtxt / NN_<pass>_after.pbtxt around every pass,
BeforeSubGraph_1.pbtxt, AfterSubGraph_1.pbtxt, AfterSubGraph_<GeOp>.pbtxt, summary.json,
partition_report.txt, and check_result.tf.json when an op is not supported on the device.

exit codes: 0 no engine errors; 1 the engine reported errors; 2 bad usage or options, found
before any work: a GRAPH that is missing, not a regular file or nests functions over 200 deep;
an unreadable or invalid option file; an --html or --dump-dir that cannot be written.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="graph_command", metavar="SUBCOMMAND")
    child = sub.add_parser(
        "inspect",
        help="report the engine's decisions for one graph file",
        description=INSPECT_DESCRIPTION,
        epilog=INSPECT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_inspect_arguments(child)
    child.set_defaults(graph_run=inspect)


def _add_inspect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("graph", metavar="GRAPH", type=Path, help="a .pb, .pbtxt or .meta file")
    opts = parser.add_argument_group("NpuOptimizer options")
    add_option_flag(opts, "the graph's compilation")
    opts.add_argument(
        "--config-from",
        metavar="FILE",
        type=Path,
        help="a JSON object of parameter_map keys to values",
    )
    add_shorthands(opts)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the summary (docs/graph-inspect.md)",
    )
    out.add_argument(
        "--html",
        metavar="OUT.html",
        type=path_arg,
        help="also write a self-contained HTML page of the partition: the failing node's box "
        "marked, the tensors crossing host and GeOps, user-op names (internal ones a click away)",
    )
    out.add_argument(
        "--dump-dir",
        metavar="DIR",
        type=path_arg,
        help="write graph dumps around every pass and the report files here",
    )
    out.add_argument(
        "--top",
        type=int,
        default=10,
        metavar="N",
        help="host-op reasons shown in the summary (default: 10)",
    )


def run(args: argparse.Namespace) -> int:
    handler = getattr(args, "graph_run", None)
    if handler is None:
        raise UsageError(
            "give a subcommand: tf2npu graph inspect GRAPH (a .pb, .pbtxt or .meta file); "
            "`tf2npu graph inspect --help` lists its options"
        )
    code: int = handler(args)
    return code


def inspect(args: argparse.Namespace) -> int:
    """Run the engine over ``args.graph`` and write the requested views."""
    from tf2npu.graph.dumps import PrintModel, pass_dumps
    from tf2npu.graph.engine import run_engine
    from tf2npu.graph.lint import RACE_CHECK, RACE_FIX, races, sinks
    from tf2npu.graph.passes.infra import PassInstrument
    from tf2npu.graph.report import summarize, to_json_text, write_report_files
    from tf2npu.graph.report.html import render_html
    from tf2npu.graph.report.text import print_summary

    options = inspect_options(args, os.environ)
    check_option_files({name: options.get(name) for name in options.explicit})
    _check_outputs(args, print_model=options.env.print_model)
    # TensorFlow (imported to parse the graph file) logs start-up notices on stderr otherwise.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    graph = _load(args.graph)
    instruments: list[PassInstrument[Any]] = []
    if args.dump_dir is not None:
        instruments.append(pass_dumps(args.dump_dir))
    if args.dump_dir is not None or options.env.print_model:
        target = args.dump_dir if args.dump_dir is not None else Path.cwd()
        instruments.append(PrintModel(target))
    found = races(graph, sinks(graph))  # on the user's graph, before the passes change it
    run_ = run_engine(graph, options, instruments=instruments)
    for race in found:
        run_.config.diagnostics.warning(RACE_CHECK, race.message(), node=race.read, fix=RACE_FIX)
    summary = summarize(run_, str(args.graph))
    if args.dump_dir is not None:
        write_report_files(summary, args.dump_dir)
    if args.html is not None:
        write_text_atomic(args.html, render_html(summary))
    if args.json:
        sys.stdout.write(to_json_text(summary))
    else:
        console = make_console()
        print_summary(summary, console, top=args.top)
        for label, path in (("Dumps", args.dump_dir), ("HTML", args.html)):
            if path is not None:
                console.print(Text.assemble((f"{label}: ", "bold"), str(path)), soft_wrap=True)
    return exit_codes.FINDINGS if summary.errors else exit_codes.OK


def _check_outputs(args: argparse.Namespace, *, print_model: bool) -> None:
    if args.top < 1:
        raise UsageError(f"--top {args.top}: give a number of reasons >= 1")
    check_input_file(args.graph, "GRAPH", "give a .pb, .pbtxt or .meta file")
    if args.html is not None:
        check_output_file(args.html, "--html", "partition.html")
    if args.dump_dir is not None:
        check_output_dir(args.dump_dir, "--dump-dir")
    elif print_model:
        check_output_dir(Path.cwd(), "PRINT_MODEL=1 (writes into the current folder)")


def _load(path: Path) -> Graph:
    """The graph file as IR, refused before the engine when its functions nest too deep."""
    from tf2npu.graph.io import read_graph_def
    from tf2npu.graph.ir import Graph

    graph_def = read_graph_def(path)
    check_function_depth(graph_def, str(path))
    return Graph.from_graph_def(graph_def).validate()


def inspect_options(args: argparse.Namespace, env: Mapping[str, str]) -> NpuOptions:
    """Resolve ``--config-from``, ``--option`` and the shorthand flags (see INSPECT_EPILOG)."""
    # The file stands for the session config; --option and the shorthands win over it.
    values = {} if args.config_from is None else from_json_file(args.config_from, "--config-from")
    return resolve(env=env, overrides={**values, **from_cli(cli_items(args))})
