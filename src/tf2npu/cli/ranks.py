"""``tf2npu run --ranks N``: the multi-rank options of ``tf2npu run`` and their launch.

The parsing and checking of ``tf2npu run`` stay in :mod:`tf2npu.cli.run`; this module turns a
checked :class:`~tf2npu.runtime.job.RunSpec` plus the rank options into a
:class:`~tf2npu.runtime.distributed.launch.JobSpec`, launches it and prints the merged summary.
The spec travels whole (options, flags, engine overrides): each rank's run is derived from it
by the launcher, never rebuilt as a command line.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from tf2npu.artifacts.run_summary import SUMMARY_FILE, RankRecord
from tf2npu.cli.console import make_console
from tf2npu.cli.paths import check_input_file, check_output_dir, path_arg
from tf2npu.config.cluster import RankEntry, load_rank_table
from tf2npu.errors import UsageError

if TYPE_CHECKING:
    from tf2npu.runtime.distributed.launch import JobResult, JobSpec
    from tf2npu.runtime.job import RunSpec

__all__ = ["add_arguments", "check_rank_folders", "is_multi_rank", "run_ranks"]

DEFAULT_JOB_TIMEOUT = 3600.0
DEFAULT_GRACE = 10.0
MAX_RANKS = 64
"""The most ranks ``--ranks`` starts on one machine (each a process of ~0.5 GB or more)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``multi-rank`` argument group of ``tf2npu run``."""
    group = parser.add_argument_group(
        "multi-rank jobs (docs/distributed.md): one process per rank on this machine"
    )
    group.add_argument(
        "--ranks",
        type=int,
        metavar="N",
        help="start N ranks of SCRIPT, each with RANK_ID, RANK_SIZE, DEVICE_ID, RANK_TABLE_FILE "
        "and JOB_ID set; collectives run on TensorFlow's collective runtime over 127.0.0.1; "
        "in ARGS, {rank} and {device} become each rank's RANK_ID and DEVICE_ID; rank k's run "
        "is REPORT_DIR/rank_k/run_spec.json, which python -m tf2npu.runtime.job runs again "
        "(docs/distributed.md, re-running a rank)",
    )
    group.add_argument(
        "--rank-table",
        metavar="FILE",
        type=path_arg,
        help="an HCCL rank table (v1.0 server_list or the older group_list layout): one rank "
        "per entry, DEVICE_ID from the table (default with --ranks: one is written)",
    )
    group.add_argument(
        "--job-timeout",
        type=float,
        default=DEFAULT_JOB_TIMEOUT,
        metavar="S",
        help=f"stop every rank after S seconds (default {DEFAULT_JOB_TIMEOUT:g}; always on)",
    )
    group.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE,
        metavar="S",
        help="after a rank fails, the others get S seconds to end before they are stopped "
        f"(default {DEFAULT_GRACE:g})",
    )
    group.add_argument(
        "--base-port",
        type=int,
        metavar="P",
        help="rank k listens on 127.0.0.1:P+k (default: free ports the system picks); with "
        "--server-id, on SERVER_ID:P+k",
    )
    group.add_argument(
        "--server-id",
        metavar="ID",
        help="several hosts: start only the ranks the --rank-table lists under server_id ID; "
        "run the same command (same table, same --base-port) on every server of the table",
    )


def is_multi_rank(args: argparse.Namespace) -> bool:
    """Whether the command asks for a launch (``--ranks`` or ``--rank-table``)."""
    return args.ranks is not None or args.rank_table is not None


def job_spec(args: argparse.Namespace, plan: RunSpec) -> JobSpec:
    """The launch the checked command line asks for.

    Raises:
        UsageError: a bad ``--ranks``, ``--rank-table``, timeout or port.
        tf2npu.errors.ConfigError: a rank table that cannot be read.
    """
    from tf2npu.runtime.distributed.launch import JobSpec

    ranks, table = _ranks(args)
    if not (math.isfinite(args.job_timeout) and args.job_timeout > 0):
        raise UsageError(
            f"--job-timeout {args.job_timeout:g}: give the seconds after which every rank is "
            f"stopped, a number > 0 (default {DEFAULT_JOB_TIMEOUT:g})"
        )
    if not (math.isfinite(args.grace) and args.grace >= 0):
        raise UsageError(
            f"--grace {args.grace:g}: give the seconds the other ranks get after one fails, a "
            f"number >= 0 (default {DEFAULT_GRACE:g})"
        )
    if args.base_port is not None and not 1024 <= args.base_port <= 65535 - len(ranks):
        raise UsageError(f"--base-port {args.base_port}: give a port in 1024..{65535 - len(ranks)}")
    _check_server_id(args, ranks)
    return JobSpec(
        run=plan,
        ranks=ranks,
        rank_table=table,
        job_timeout=args.job_timeout,
        grace=args.grace,
        env=_timeout_env(plan),
        base_port=args.base_port,
        host=args.server_id,
    )


def _check_server_id(args: argparse.Namespace, ranks: tuple[RankEntry, ...]) -> None:
    if args.server_id is None:
        return
    servers = sorted({r.server_id for r in ranks})
    if args.rank_table is None or args.base_port is None:
        raise UsageError(
            f"--server-id {args.server_id}: give --rank-table (the job's servers and their "
            "devices) and --base-port (the same on every server, so that the ranks find each "
            "other)"
        )
    if args.server_id not in servers:
        raise UsageError(
            f"--server-id {args.server_id}: the rank table lists servers {servers}; give one "
            "of them"
        )


def _ranks(args: argparse.Namespace) -> tuple[tuple[RankEntry, ...], Path | None]:
    if args.rank_table is None:
        if not 1 <= args.ranks <= MAX_RANKS:
            raise UsageError(
                f"--ranks {args.ranks}: give the number of ranks, 1 to {MAX_RANKS} (each rank is "
                "a TensorFlow process on this machine; an Ascend server holds 8 or 16 devices)"
            )
        return tuple(RankEntry(rank, rank) for rank in range(args.ranks)), None
    check_input_file(args.rank_table, "--rank-table", "give the path of an HCCL rank table")
    ranks = load_rank_table(args.rank_table)
    if args.ranks is not None and args.ranks != len(ranks):
        raise UsageError(
            f"--ranks {args.ranks} but --rank-table {str(args.rank_table)!r} lists {len(ranks)} "
            "ranks; give one of them, or make them agree"
        )
    return ranks, args.rank_table.resolve()


def _timeout_env(plan: RunSpec) -> dict[str, str]:
    """``--option hccl_timeout=S`` is the collectives' execution timeout, as on the device."""
    for item in plan.options:
        key, _, value = item.partition("=")
        if key == "hccl_timeout":
            return {"HCCL_EXEC_TIMEOUT": value}
    return {}


def check_rank_folders(spec: JobSpec, dump: Path | None) -> None:
    """Check (and create) every folder a rank of ``spec`` writes into, before any starts.

    A rank runs a spec file, which checks no folder (each rank's own ``tf2npu run`` once did):
    its report folder, and its ``--dump`` (an NPU dump: the ``dump`` folder itself, ``{rank}``
    replaced), ``--profile`` and ``--export-graph`` folders, named by the flag that gave them.

    Raises:
        UsageError: a folder that is a file, under a file, or not writable.
    """
    from tf2npu.runtime.distributed.launch import rank_arguments, rank_spec

    for entry in spec.local_ranks:
        run = rank_spec(spec.run, entry)
        npu_dump = None
        if run.npu and dump is not None:
            npu_dump = Path(rank_arguments([str(dump.resolve())], entry)[0])
        folders = {
            "--report-dir": run.report_dir,
            "--dump": run.golden_dump or npu_dump,
            "--profile": run.profile,
            "--export-graph": run.export_graph,
        }
        for flag, folder in folders.items():
            if folder is not None:
                check_output_dir(folder, flag)


def run_ranks(args: argparse.Namespace, plan: RunSpec) -> int:
    """Launch the job, print the merged summary (unless ``--quiet``); the job's exit status."""
    from tf2npu.runtime.distributed.launch import launch

    spec = job_spec(args, plan)
    check_rank_folders(spec, args.dump)
    result = launch(spec)
    if result.message:
        print(f"tf2npu run: error: {result.message}", file=sys.stderr)
    if not args.quiet:
        print_job_summary(result, spec)
    return result.status


def print_job_summary(result: JobResult, spec: JobSpec) -> None:
    """One line per rank: status, steps, last loss, collectives run and bytes moved."""
    console = make_console(stderr=True)
    sys.stdout.flush()
    head = Text.assemble(("tf2npu run", "bold"), f" {spec.run.script.name} on {spec.size} ranks: ")
    head.append(f"exit status {result.status}", style="green" if result.status == 0 else "bold red")
    console.print(head)
    for rank in result.summary.per_rank if result.summary is not None else ():
        console.print(Text(f"  rank {rank.rank}: {_rank_line(rank)}"))
    path = spec.report_dir / SUMMARY_FILE
    console.print(Text.assemble(("Summary: ", "bold"), str(path)), soft_wrap=True)


def _rank_line(rank: RankRecord) -> str:
    status = f"killed by {rank.signal}" if rank.signal else f"exit {rank.status}"
    if rank.stopped:
        status += " (stopped)"
    count, tensors = rank.collective_count, rank.tensors_carried
    fused = f" carrying {tensors} tensors" if tensors != count else ""
    parts = [
        status,
        f"{rank.steps if rank.steps is not None else '?'} steps",
        f"loss {rank.loss:.6g}" if rank.loss is not None else "loss -",
        f"{count} collectives{fused}, {rank.bytes_sent / 1e6:.2f} MB",
    ]
    return ", ".join(parts)
