"""Start the ranks of a multi-rank job on this machine, watch them, stop them all on a failure.

``tf2npu run --ranks N SCRIPT ARGS`` comes here with the job's
:class:`~tf2npu.runtime.job.RunSpec`. The launcher derives each rank's spec from it
(:func:`rank_spec`: the rank's own report, dump and profile folders, ``{rank}`` in the script's
arguments), writes it to ``REPORT_DIR/rank_<k>/run_spec.json`` and starts
:func:`~tf2npu.runtime.job.child_command` of that file, so every rank runs the script exactly
as a one-rank ``tf2npu run --quiet`` does, and the file is there to re-run the rank by hand
(docs/distributed.md). Each rank gets the environment a real Ascend cluster gives a process:
``RANK_ID``, ``RANK_SIZE``, ``DEVICE_ID``, ``RANK_TABLE_FILE``, ``JOB_ID``; plus the gRPC
address of every rank on 127.0.0.1 (:data:`~tf2npu.config.env.ADDRESSES_VARIABLE`) for
TensorFlow's collective runtime.

The launcher is the job's watchdog, because some hangs ignore every timeout TensorFlow offers
(a rank waiting for a step id from a dead leader retries forever). When a rank exits non-zero
or is killed, the others get ``grace`` seconds to end on their own, then SIGTERM, then SIGKILL,
each rank's whole process group, by id. A job timeout is always in force. The job exits with
the first failing rank's status (a signal ``n`` as ``128 + n``, the job timeout as 124) and a
message naming that rank, its error and the collective it was in.

Nothing here imports TensorFlow: the launcher only starts processes and reads their output.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from tf2npu.artifacts import run_spec
from tf2npu.artifacts.run_summary import SUMMARY_FILE, JobSummary, RankRecord, read_summary
from tf2npu.atomic import write_text_atomic
from tf2npu.config.cluster import RankEntry
from tf2npu.config.env import ADDRESSES_VARIABLE
from tf2npu.config.profiling import profile_options
from tf2npu.errors import Tf2NpuError
from tf2npu.procs import GroupWatch, Terminated, die_with_parent
from tf2npu.runtime.determinism import NPU_OPTION
from tf2npu.runtime.job import RunSpec, child_command

__all__ = [
    "JOB_TIMEOUT_STATUS",
    "JobResult",
    "JobSpec",
    "LaunchError",
    "RankOutcome",
    "free_ports",
    "launch",
    "rank_arguments",
    "rank_spec",
    "rank_spec_file",
    "rank_table_json",
    "write_rank_specs",
]


class LaunchError(Tf2NpuError):
    """The ranks could not all be started (the ones that were have been stopped)."""

    exit_code = 1


#: Exit status when the job timeout ends the job (as ``timeout(1)``).
JOB_TIMEOUT_STATUS = 124
#: The launcher retries a start whose gRPC server could not bind (another process took the
#: free port between the pick and the bind).
_PORT_RETRIES = 2
_PORT_TAKEN = "Could not start gRPC server"
_TERM_WAIT = 3.0
_TAIL_LINES = 40
#: Seconds a rank that exited 0 may precede the others before the launcher remarks on it.
_EARLY_NOTE = 2.0
_POLL = 0.05
#: ``tf2npu run: error: ... collective HcomAllReduce 'node' ...`` (see distributed.errors).
_COLLECTIVE = re.compile(r"collective (Hcom\w+) '([^']+)'")
_RUN_ERROR = "tf2npu run: error: "
_ABORT = re.compile(r"StartAbort (.*)$")
_ERROR_LINE = re.compile(r"^(tf2npu run: error: .*|[A-Za-z_.]*(Error|Exception|Exit)\b.*)$")


@dataclass(frozen=True)
class JobSpec:
    """What to start: the run every rank makes, the ranks, the limits."""

    run: RunSpec
    """The job's run as ``tf2npu run`` checked it; :func:`rank_spec` makes each rank's from it.
    Its ``report_dir`` is the job's (:attr:`report_dir`)."""
    ranks: tuple[RankEntry, ...]
    rank_table: Path | None = None
    """Given with ``--rank-table``; None: the launcher writes one into ``report_dir``."""
    job_timeout: float = 3600.0
    grace: float = 10.0
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra variables for every rank (``HCCL_EXEC_TIMEOUT`` from ``hccl_timeout`` ...)."""
    base_port: int | None = None
    host: str | None = None
    """``--server-id``: start only the rank table's ranks of this server; the launchers of the
    other servers start theirs. Rank ``k`` then listens on ``server_id:base_port + k`` (TF's
    server binds every interface, so two servers on one machine need other ports too). None:
    every rank, here, on 127.0.0.1."""

    @property
    def report_dir(self) -> Path:
        """Rank ``k`` reports into ``report_dir/rank_<k>``; the merged summary goes here."""
        return self.run.report_dir

    @property
    def size(self) -> int:
        return len(self.ranks)

    @property
    def local_ranks(self) -> tuple[RankEntry, ...]:
        """The ranks this launcher starts."""
        if self.host is None:
            return self.ranks
        return tuple(r for r in self.ranks if r.server_id == self.host)


@dataclass
class RankOutcome:
    """How one rank ended."""

    rank: int
    status: int | None = None
    """Exit status (``128 + n`` for signal ``n``); None while running."""
    signal: str = ""
    """``SIGKILL`` ... when a signal ended it."""
    stopped: bool = False
    """The launcher stopped it (after another rank failed, or at the job timeout)."""
    error: str = ""
    """The last error line it printed."""
    collective: str = ""
    """``HcomAllReduce 'node'`` when its error names a collective."""
    seconds: float = 0.0


@dataclass
class JobResult:
    """How the job ended: the status to exit with, and each rank's outcome."""

    status: int
    ranks: list[RankOutcome]
    failed: int | None = None
    """The rank id of the first rank that failed (None: all succeeded, or the job timeout
    ended it)."""
    timed_out: bool = False
    message: str = ""
    summary: JobSummary | None = None
    """The job's summary, once it ended (what :func:`launch` wrote)."""
    seconds: float = 0.0

    def outcome(self, rank: int) -> RankOutcome:
        """The outcome of rank ``rank``."""
        return next(o for o in self.ranks if o.rank == rank)


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports the kernel says are free on ``host`` (all held while picking)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def rank_table_json(ranks: Sequence[RankEntry]) -> dict[str, Any]:
    """A v1.0 rank table (``server_list``) for ``ranks``, all on server 127.0.0.1."""
    devices = [
        {"device_id": str(r.device_id), "device_ip": r.device_ip or "127.0.0.1",
         "rank_id": str(r.rank_id)}
        for r in ranks
    ]  # fmt: skip
    return {
        "version": "1.0",
        "server_count": "1",
        "server_list": [{"server_id": "127.0.0.1", "device": devices, "host_nic_ip": "reserve"}],
        "status": "completed",
    }


def launch(spec: JobSpec, out: IO[str] | None = None) -> JobResult:
    """Run the job to its end; every rank's output goes to ``out`` prefixed ``[rank k]``.

    The merged summary is written to ``report_dir/run_summary.json`` and returned in the result.
    """
    stream = out if out is not None else sys.stdout
    spec.report_dir.mkdir(parents=True, exist_ok=True)
    table = spec.rank_table or _write_rank_table(spec)
    write_rank_specs(spec)  # before any rank starts: a spec that cannot be written starts none
    started = time.monotonic()
    retries = _PORT_RETRIES if spec.base_port is None else 0  # fixed ports: no new pick
    for attempt in range(retries + 1):
        addresses = _addresses(spec)
        job = _Job(spec, table, addresses, stream)
        result = job.run()
        taken = job.taken_address()
        if taken is not None and spec.base_port is not None:
            result.message = (
                f"--base-port {spec.base_port}: {taken} is taken by another process (rank "
                f"k listens on port {spec.base_port}+k); give a --base-port whose ports "
                f"{spec.base_port}..{spec.base_port + spec.size - 1} are free, or leave it out "
                "to let the system pick free ports\n" + result.message
            )
        if attempt < retries and taken is not None:
            print(f"tf2npu run: a rank could not bind its port; restarting ({addresses})",
                  file=stream)  # fmt: skip
            continue
        break
    result.seconds = round(time.monotonic() - started, 3)
    result.summary = merged_summary(spec, result)
    write_text_atomic(
        spec.report_dir / SUMMARY_FILE, json.dumps(result.summary.to_json(), indent=2)
    )
    return result


def rank_arguments(arguments: Sequence[str], entry: RankEntry) -> list[str]:
    """``arguments`` for rank ``entry``: ``{rank}`` becomes its ``RANK_ID``, ``{device}`` its
    ``DEVICE_ID``.

    A cluster's launch script passes per-rank flags from the shell (``--model_dir=out/$RANK_ID``,
    ``--device_id=$ASCEND_DEVICE_ID``); the launcher has no shell, so these stand for them.

    >>> rank_arguments(["--out=ckpt_{rank}", "--dev", "{device}"], RankEntry(1, 5))
    ['--out=ckpt_1', '--dev', '5']
    """
    rank, device = str(entry.rank_id), str(entry.device_id)
    return [arg.replace("{rank}", rank).replace("{device}", device) for arg in arguments]


def rank_spec(run: RunSpec, entry: RankEntry) -> RunSpec:
    """The run of rank ``entry`` in a job whose run is ``run``.

    Every rank writes the same file names, so each writes into folders of its own: its report
    into ``report_dir/rank_<k>``, a golden dump (``--no-npu --dump``), a profile and a graph
    export into ``DIR/rank_<k>`` (an NPU dump's path already holds ``DEVICE_ID``). ``{rank}``
    and ``{device}`` are replaced (:func:`rank_arguments`) in the script's arguments, in the
    ``--option`` items and in those folders, as a launch script's ``$RANK_ID`` would be. The
    rank's notes are off (``quiet``): the launcher prints the job's summary.

    The options ``tf2npu run`` made from ``--profile DIR`` (``profiling_mode``,
    ``profiling_options``, which would send every rank's profile to ``DIR``) are made again
    with the rank's folder, and ``--deterministic``'s ``deterministic=1`` again after them: the
    rank's options are then those a ``tf2npu run`` of the rank's own flags makes, as when each
    rank parsed the flags again (an ``--option`` of these keys beside the flag gives way to it).
    """
    folder = f"rank_{entry.rank_id}"

    def own(path: Path | None) -> Path | None:
        return None if path is None else Path(rank_arguments([str(path)], entry)[0]) / folder

    profile = own(run.profile)
    remade = {"deterministic"} if run.deterministic else set()
    if profile is not None:
        remade |= {"profiling_mode", "profiling_options"}
    kept = [item for item in run.options if item.partition("=")[0] not in remade]
    options = rank_arguments(kept, entry)
    if profile is not None:
        options += profile_options(profile)
    if run.deterministic and run.npu:
        options.append(NPU_OPTION)
    return replace(
        run,
        script_args=tuple(rank_arguments(run.script_args, entry)),
        report_dir=run.report_dir / folder,
        options=tuple(options),
        golden_dump=own(run.golden_dump),
        profile=profile,
        export_graph=own(run.export_graph),
        quiet=True,
    )


def rank_spec_file(spec: JobSpec, rank: int) -> Path:
    """Where the launcher writes rank ``rank``'s run spec: ``report_dir/rank_<k>/run_spec.json``."""
    return spec.report_dir / f"rank_{rank}" / run_spec.SPEC_FILE


def write_rank_specs(spec: JobSpec) -> list[Path]:
    """Write the run spec of every rank this launcher starts (:attr:`JobSpec.local_ranks`).

    Raises:
        LaunchError: a spec file could not be written (a full disk, a file where the rank's
            folder goes).
    """
    written = []
    for entry in spec.local_ranks:
        path = rank_spec_file(spec, entry.rank_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            for stale in (SUMMARY_FILE, run_spec.START_ERROR_FILE):  # an earlier job's
                (path.parent / stale).unlink(missing_ok=True)
            run_spec.write(path, rank_spec(spec.run, entry))
        except OSError as exc:
            raise LaunchError(
                f"cannot write the run spec of rank {entry.rank_id}, {str(path)!r} "
                f"({exc.strerror or exc}); no rank was started. Make room on the disk of the "
                f"--report-dir, or move what is in the way of {str(path.parent)!r}"
            ) from None
        written.append(path)
    return written


def _addresses(spec: JobSpec) -> list[str]:
    """Every rank's ``host:port``, in rank order (see :attr:`JobSpec.host`)."""
    ordered = sorted(spec.ranks, key=lambda r: r.rank_id)
    if spec.host is not None:
        assert spec.base_port is not None, "cli.ranks requires --base-port with --server-id"
        return [f"{r.server_id}:{spec.base_port + r.rank_id}" for r in ordered]
    if spec.base_port is not None:
        return [f"127.0.0.1:{spec.base_port + r.rank_id}" for r in ordered]
    return [f"127.0.0.1:{port}" for port in free_ports(spec.size)]


def _write_rank_table(spec: JobSpec) -> Path:
    path = spec.report_dir / "rank_table.json"
    write_text_atomic(path, json.dumps(rank_table_json(spec.ranks), indent=2) + "\n")
    return path


class _Rank:
    """One child process, its output pump and the tail of what it printed."""

    def __init__(
        self, rank: int, argv: list[str], env: dict[str, str], out: IO[str], folder: Path
    ) -> None:
        self.outcome = RankOutcome(rank)
        self.folder = folder
        """The rank's report folder: its run summary, or why its spec never started."""
        self.tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopping it stops its children
            preexec_fn=die_with_parent(),  # SIGKILL (the OOM killer's) of the launcher too
        )
        self._watch = GroupWatch(self.process.pid)  # its group dies with the launcher too
        self._pump = threading.Thread(target=self._copy, args=(out,), daemon=True)
        try:
            self._pump.start()
        except BaseException:  # no thread left (a process limit): the rank must not run on
            self.signal_group(signal.SIGKILL)
            self.process.wait()
            raise

    def _copy(self, out: IO[str]) -> None:
        assert self.process.stdout is not None
        prefix = f"[rank {self.outcome.rank}] "
        for raw in iter(self.process.stdout.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            self.tail.append(line)
            out.write(prefix + line + "\n")
            out.flush()
        self.process.stdout.close()

    def poll(self) -> int | None:
        code = self.process.poll()
        if code is not None and self.outcome.status is None:
            self.outcome.seconds = round(time.monotonic() - self.started, 3)
            if code < 0:
                self.outcome.signal = signal.Signals(-code).name
                code = 128 - code
            self.outcome.status = code
        return self.outcome.status

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    def finish(self) -> None:
        """Wait for the output to drain, then take the rank's error: as data when the rank
        left it (its run summary's ``error``, or the ``start_error.json`` of a spec that never
        reached the script), else the last error line it printed (a rank that died first)."""
        self._pump.join(timeout=5)
        self.signal_group(signal.SIGKILL)  # anything the rank left behind in its group
        self._watch.release()
        error = _recorded_error(self.folder) or next(
            (line.strip() for line in reversed(self.tail) if _ERROR_LINE.match(line.strip())), ""
        )
        if not error:  # killed inside TensorFlow (its abort path can crash): its own log line
            error = next(
                (f"TensorFlow: {m.group(1)}" for m in map(_ABORT.search, reversed(self.tail)) if m),
                "",
            )
        self.outcome.error = error.removeprefix(_RUN_ERROR)
        for line in reversed(self.tail):
            found = _COLLECTIVE.search(line)
            if found:
                self.outcome.collective = f"{found.group(1)} '{found.group(2)}'"
                break


def _recorded_error(folder: Path) -> str:
    """Why the rank reporting into ``folder`` failed, as it recorded it (``""``: it did not)."""
    summary = read_summary(folder)
    if summary is not None and summary.error is not None:
        return summary.error.describe()
    return run_spec.read_start_error(folder) or ""


class _Job:
    def __init__(self, spec: JobSpec, table: Path, addresses: list[str], out: IO[str]) -> None:
        self.spec = spec
        self.table = table
        self.addresses = addresses
        self.out = out
        self.ranks: list[_Rank] = []

    def run(self) -> JobResult:
        spec = self.spec
        deadline = time.monotonic() + spec.job_timeout
        previous = _forward_termination()
        try:
            self._start()
            failed, timed_out = self._watch(deadline)
        except BaseException:  # Ctrl-C, SIGTERM, a failed start: no rank outlives the launcher
            self._stop()
            raise
        finally:
            _restore_termination(previous)
        self._stop()
        return self._result(failed, timed_out)

    def _start(self) -> None:
        for entry in self.spec.local_ranks:
            try:
                spec_file = rank_spec_file(self.spec, entry.rank_id)
                command = child_command(spec_file)
                rank = _Rank(entry.rank_id, command, self._env(entry), self.out, spec_file.parent)
            except (OSError, RuntimeError) as exc:  # fork/exec failed, or no thread left
                raise LaunchError(
                    f"could not start rank {entry.rank_id} of {self.spec.size} ({exc}); the "
                    f"{len(self.ranks)} rank(s) started were stopped. Start fewer ranks, or "
                    "raise the process limit (ulimit -u) or free memory"
                ) from None
            self.ranks.append(rank)

    def _watch(self, deadline: float) -> tuple[int | None, bool]:
        failed: int | None = None
        stop_at = deadline
        early: dict[int, float | None] = {}
        while True:
            statuses = [rank.poll() for rank in self.ranks]
            running = [i for i, s in enumerate(statuses) if s is None]
            if failed is None:
                # Before the all-ended check: a last rank that failed fails the job.
                failed = next((i for i, s in enumerate(statuses) if s not in (None, 0)), None)
                if failed is not None and running:
                    stop_at = min(deadline, time.monotonic() + self.spec.grace)
                    self._note_failure(failed)
                elif running:
                    self._note_early_exits(statuses, early)
            if not running:
                return failed, False
            now = time.monotonic()
            if now >= stop_at:
                return failed, failed is None or now >= deadline
            time.sleep(_POLL)

    def _note_failure(self, index: int) -> None:
        outcome = self.ranks[index].outcome
        how = f"was killed by {outcome.signal}" if outcome.signal else f"exited {outcome.status}"
        print(
            f"tf2npu run: rank {outcome.rank} {how}; the other ranks get {self.spec.grace:g} s "
            "to end",
            file=self.out,
            flush=True,
        )

    def _note_early_exits(
        self, statuses: Sequence[int | None], seen: dict[int, float | None]
    ) -> None:
        """Say when a rank ended well and the others still run ``_EARLY_NOTE`` s later: their
        next collective cannot complete. (Ranks of a good job end within moments of each
        other; they are not worth a warning.) ``seen``: rank -> when its exit was seen, None
        once said."""
        ids = [rank.outcome.rank for rank in self.ranks]
        running = [ids[i] for i, s in enumerate(statuses) if s is None]
        now = time.monotonic()
        for index, status in enumerate(statuses):
            if status != 0:
                continue
            rank = ids[index]
            since = seen.setdefault(rank, now)
            if since is not None and now - since >= _EARLY_NOTE:
                seen[rank] = None
                others = ", ".join(map(str, running))
                print(
                    f"tf2npu run: rank {rank} exited 0 while rank(s) {others} still run; fine if "
                    "they are only finishing (a checkpoint, an evaluation), but a collective they "
                    "call now cannot complete",
                    file=self.out,
                    flush=True,
                )

    def _stop(self) -> None:
        running = [rank for rank in self.ranks if rank.poll() is None]
        for rank in running:
            rank.outcome.stopped = True
            rank.signal_group(signal.SIGTERM)
        end = time.monotonic() + _TERM_WAIT
        while any(rank.poll() is None for rank in running) and time.monotonic() < end:
            time.sleep(_POLL)
        for rank in self.ranks:
            if rank.poll() is None:
                rank.signal_group(signal.SIGKILL)
                rank.process.wait()
                rank.poll()
            rank.finish()

    def port_taken(self) -> bool:
        return self.taken_address() is not None

    def taken_address(self) -> str | None:
        """The ``host:port`` of the first rank that could not bind it, if one could not."""
        for rank in self.ranks:
            if any(_PORT_TAKEN in line for line in rank.tail):
                index = sorted(r.rank_id for r in self.spec.ranks).index(rank.outcome.rank)
                return self.addresses[index]
        return None

    def _env(self, entry: RankEntry) -> dict[str, str]:
        spec = self.spec
        env = {k: v for k, v in os.environ.items() if k not in ("POD_NAME", "CM_WORKER_SIZE")}
        device = str(entry.device_id)
        env.update(
            RANK_ID=str(entry.rank_id),
            RANK_SIZE=str(spec.size),
            DEVICE_ID=device,
            ASCEND_DEVICE_ID=device,
            RANK_TABLE_FILE=str(self.table.resolve()),
            PYTHONUNBUFFERED="1",
        )
        env.setdefault("JOB_ID", str(os.getpid()))
        env[ADDRESSES_VARIABLE] = ",".join(self.addresses)
        # gRPC sends even 127.0.0.1 through http(s)_proxy; the ranks would never meet.
        ours = ["127.0.0.1", "localhost", *(a.rpartition(":")[0] for a in self.addresses)]
        for name in ("no_proxy", "NO_PROXY"):
            hosts = [h for h in env.get(name, "").split(",") if h]
            env[name] = ",".join([*hosts, *dict.fromkeys(h for h in ours if h not in hosts)])
        env.update(spec.env)
        return env

    def _result(self, failed: int | None, timed_out: bool) -> JobResult:
        outcomes = [rank.outcome for rank in self.ranks]
        if timed_out and failed is None:
            status = JOB_TIMEOUT_STATUS
        elif failed is not None:
            status = outcomes[failed].status or 1
        else:
            status = 0
        failed_rank = outcomes[failed].rank if failed is not None else None
        result = JobResult(status, outcomes, failed_rank, timed_out)
        result.message = failure_message(result, self.spec)
        return result


def failure_message(result: JobResult, spec: JobSpec) -> str:
    """Which rank ended the job, how, with what error, in which collective; then the others."""
    if result.status == 0:
        return ""
    lines = []
    if result.failed is not None:
        first = result.outcome(result.failed)
        how = (
            f"was killed by {first.signal}"
            if first.signal
            else f"exited with status {first.status}"
        )
        where = f" in collective {first.collective}" if first.collective else ""
        lines.append(f"rank {first.rank} {how}{where}")
        if first.error:
            lines.append(f"  error: {first.error}")
    else:
        lines.append(f"the job timeout ({spec.job_timeout:g} s, --job-timeout) ended the job")
    for outcome in result.ranks:
        if outcome.rank != result.failed:
            lines.extend(_other_rank(outcome, result.failed is not None))
    if result.failed is not None:
        lines.extend(_ended_before(result.outcome(result.failed), result.ranks))
    return "\n".join(lines)


def _ended_before(failed: RankOutcome, ranks: Sequence[RankOutcome]) -> list[str]:
    """The ranks that exited 0 before a rank failed in a collective: the likely cause."""
    if not failed.collective and "Collective" not in failed.error:  # TF's own abort line
        return []
    lines = [
        f"rank {o.rank} had exited with status 0, {failed.seconds - o.seconds:.1f} s before"
        for o in ranks
        if o.status == 0 and not o.stopped and o.seconds < failed.seconds
    ]
    if lines:
        lines.append(
            "  every rank must run the same collectives: a rank that ends while the others "
            'still call them makes them fail (its server is gone: "Socket closed")'
        )
    return lines


def _other_rank(outcome: RankOutcome, after_failure: bool) -> list[str]:
    """What happened to a rank that did not end the job (its own error, if it printed one)."""
    where = f" in collective {outcome.collective}" if outcome.collective else ""
    if outcome.stopped:
        hung = " (hung? it printed no error)" if after_failure and not outcome.error else ""
        line = f"rank {outcome.rank} was still running{where} and was stopped{hung}"
    elif outcome.status:
        line = f"rank {outcome.rank} then failed{where}"
    else:
        return []
    return [line] + ([f"  error: {outcome.error}"] if outcome.error else [])


def merged_summary(spec: JobSpec, result: JobResult) -> JobSummary:
    """The job's ``run_summary.json``: each rank's own summary (read back), and how it ended."""
    ranks = []
    for outcome in result.ranks:
        folder = spec.report_dir / f"rank_{outcome.rank}"
        own = read_summary(folder)
        distributed = (own.distributed if own is not None else None) or {}
        loss = distributed.get("loss")
        collectives = distributed.get("collectives")
        ranks.append(
            RankRecord(
                rank=outcome.rank,
                status=outcome.status,
                signal=outcome.signal or None,
                stopped=outcome.stopped,
                error=outcome.error or None,
                collective=outcome.collective or None,
                seconds=outcome.seconds,
                steps=own.steps if own is not None else None,
                loss=float(loss) if isinstance(loss, int | float) else None,
                collectives=collectives if isinstance(collectives, dict) else {},
                report_dir=str(folder),
            )
        )
    return JobSummary.of_ranks(
        ranks,
        size=spec.size,
        exit_status=result.status,
        failed_rank=result.failed,
        timed_out=result.timed_out,
        message=result.message or None,
        wall_seconds=result.seconds,
    )


def _forward_termination() -> Any:
    """SIGTERM and SIGHUP to the launcher become :class:`~tf2npu.procs.Terminated` (a
    KeyboardInterrupt), so the ranks are stopped too and the exit status is 128 + the signal."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}


def _restore_termination(previous: Any) -> None:
    for sig, handler in (previous or {}).items():
        signal.signal(sig, handler)
