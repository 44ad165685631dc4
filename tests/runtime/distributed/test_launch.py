"""distributed.launch: rank tables, messages, merged summaries; then real jobs of 2 ranks.

The multi-process tests start 2 ranks of ``scripts/mlp.py`` (each imports TensorFlow, about
10-20 s on a loaded machine): one that must end with identical weights, and one per fault.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tf2npu.config.cluster import RankEntry, parse_rank_table
from tf2npu.runtime.distributed.launch import (
    JobResult,
    JobSpec,
    LaunchError,
    RankOutcome,
    _Job,
    failure_message,
    free_ports,
    launch,
    merged_summary,
    rank_arguments,
    rank_spec,
    rank_table_json,
    write_rank_specs,
)
from tf2npu.runtime.job import RunSpec, child_command

SCRIPT = Path(__file__).parent / "scripts" / "mlp.py"
RANKS = (RankEntry(0, 0), RankEntry(1, 1))


def _run(script: Path, args: tuple[str, ...], report_dir: Path) -> RunSpec:
    """What ``tf2npu run --report-dir REPORT_DIR SCRIPT ARGS`` makes (NPU sessions, host)."""
    return RunSpec(script, args, report_dir, options=(), npu=True, execution="host")


def _spec(tmp_path: Path, *args: str, **kwargs: object) -> JobSpec:
    fields: dict[str, object] = {"job_timeout": 240.0, "grace": 2.0, **kwargs}
    return JobSpec(_run(SCRIPT, args, tmp_path / "report"), RANKS, **fields)  # type: ignore[arg-type]


def test_written_rank_table_reads_back() -> None:
    ranks = (RankEntry(0, 4), RankEntry(1, 5))
    assert parse_rank_table(rank_table_json(ranks)) == (
        RankEntry(0, 4, "127.0.0.1", "127.0.0.1"),
        RankEntry(1, 5, "127.0.0.1", "127.0.0.1"),
    )


def test_rank_arguments_stand_for_the_shell_variables_of_a_launch_script() -> None:
    entry = RankEntry(1, 5)
    assert rank_arguments(["--model_dir=out/{rank}/ckpt", "--device_id", "{device}", "-x"], entry) == [
        "--model_dir=out/1/ckpt", "--device_id", "5", "-x"
    ]  # fmt: skip
    assert rank_arguments(["{rank}{rank}", "{ranks}", "rank"], RankEntry(0, 0)) == [
        "00", "{ranks}", "rank"
    ]  # fmt: skip


def test_each_rank_gets_its_own_arguments_and_folders() -> None:
    job = RunSpec(
        script=Path("/w/train.py"),
        script_args=("--out", "ckpt_{rank}", "--dev={device}"),
        report_dir=Path("/w/r"),
        options=("dump_path=/w/npu_{rank}", "profiling_mode=false", "deterministic=1"),
        npu=True,
        execution="host",
        golden_dump=Path("/w/golden_{device}"),
        profile=Path("/w/prof"),
        export_graph=Path("/w/graphs"),
        deterministic=True,
        verbose=True,
    )
    assert rank_spec(job, RankEntry(1, 3)) == RunSpec(
        script=Path("/w/train.py"),
        script_args=("--out", "ckpt_1", "--dev=3"),
        report_dir=Path("/w/r/rank_1"),
        options=(
            "dump_path=/w/npu_1",
            "profiling_mode=true",
            'profiling_options={"output": "/w/prof/rank_1"}',
            "deterministic=1",
        ),
        npu=True,
        execution="host",
        golden_dump=Path("/w/golden_3/rank_1"),
        profile=Path("/w/prof/rank_1"),
        export_graph=Path("/w/graphs/rank_1"),
        deterministic=True,
        verbose=True,
        quiet=True,
    )
    # Without --profile and --deterministic, the options are the job's (placeholders replaced).
    plain = RunSpec(Path("/w/t.py"), (), Path("/w/r"), ("deterministic=0",), False, "host")
    assert rank_spec(plain, RankEntry(0, 0)) == RunSpec(
        Path("/w/t.py"), (), Path("/w/r/rank_0"), ("deterministic=0",), False, "host", quiet=True
    )


def test_the_rank_specs_are_written_for_the_local_ranks(tmp_path: Path) -> None:
    ranks = (RankEntry(0, 0, "a"), RankEntry(1, 0, "b"), RankEntry(2, 1, "b"))
    spec = JobSpec(_run(SCRIPT, ("{rank}",), tmp_path), ranks, base_port=30000, host="b")
    assert write_rank_specs(spec) == [
        tmp_path / "rank_1" / "run_spec.json", tmp_path / "rank_2" / "run_spec.json"
    ]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank_1", "rank_2"]
    back = RunSpec.from_json(json.loads((tmp_path / "rank_2" / "run_spec.json").read_text()))
    assert back == rank_spec(spec.run, ranks[2])
    assert back.script_args == ("2",)
    assert child_command(tmp_path / "rank_2" / "run_spec.json") == [
        sys.executable, "-m", "tf2npu.runtime.job", str(tmp_path / "rank_2" / "run_spec.json")
    ]  # fmt: skip


def test_a_rank_spec_that_cannot_be_written_starts_no_rank(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    spec.report_dir.mkdir()
    (spec.report_dir / "rank_1").write_text("in the way")
    with pytest.raises(LaunchError) as info:
        launch(spec, io.StringIO())
    path = spec.report_dir / "rank_1" / "run_spec.json"
    assert str(info.value) == (
        f"cannot write the run spec of rank 1, {str(path)!r} (File exists); no rank was "
        "started. Make room on the disk of the --report-dir, or move what is in the way of "
        f"{str(path.parent)!r}"
    )


def test_free_ports_are_distinct() -> None:
    ports = free_ports(4)
    assert len(set(ports)) == 4 and all(1024 <= p < 65536 for p in ports)


def test_failure_message(tmp_path: Path) -> None:
    killed = RankOutcome(1, status=137, signal="SIGKILL")
    other = RankOutcome(
        0, status=143, stopped=True, error="rank 0: collective HcomAllReduce 'a' failed: x",
        collective="HcomAllReduce 'a'",
    )  # fmt: skip
    result = JobResult(137, [other, killed], failed=1)
    assert failure_message(result, _spec(tmp_path)) == (
        "rank 1 was killed by SIGKILL\n"
        "rank 0 was still running in collective HcomAllReduce 'a' and was stopped\n"
        "  error: rank 0: collective HcomAllReduce 'a' failed: x"
    )
    hung = JobResult(
        1, [RankOutcome(0, 1, error="ValueError: no"), RankOutcome(1, 143, stopped=True)], failed=0
    )
    assert failure_message(hung, _spec(tmp_path)) == (
        "rank 0 exited with status 1\n  error: ValueError: no\n"
        "rank 1 was still running and was stopped (hung? it printed no error)"
    )
    timeout = JobResult(124, [RankOutcome(0, 143, stopped=True)], timed_out=True)
    assert failure_message(timeout, _spec(tmp_path, job_timeout=9.0)).startswith(
        "the job timeout (9 s, --job-timeout) ended the job"
    )
    assert failure_message(JobResult(0, []), _spec(tmp_path)) == ""


def test_failure_message_names_a_rank_that_ended_before_the_collective_failed(
    tmp_path: Path,
) -> None:
    waiting = RankOutcome(
        0, status=1, seconds=31.5, error="rank 0: collective HcomAllReduce 'a' failed: x",
        collective="HcomAllReduce 'a'",
    )  # fmt: skip
    result = JobResult(1, [waiting, RankOutcome(1, status=0, seconds=11.25)], failed=0)
    assert failure_message(result, _spec(tmp_path)).splitlines() == [
        "rank 0 exited with status 1 in collective HcomAllReduce 'a'",
        "  error: rank 0: collective HcomAllReduce 'a' failed: x",
        "rank 1 had exited with status 0, 20.2 s before",
        "  every rank must run the same collectives: a rank that ends while the others still "
        'call them makes them fail (its server is gone: "Socket closed")',
    ]
    # Not in a collective: the rank that ended first is not blamed.
    alone = RankOutcome(0, status=1, seconds=31.5, error="ValueError: bad eval data")
    result = JobResult(1, [alone, RankOutcome(1, status=0, seconds=11.25)], failed=0)
    assert "had exited" not in failure_message(result, _spec(tmp_path))


class _ScriptedRank:
    """A rank whose poll() gives the next status of a script (the last one repeats)."""

    def __init__(self, rank: int, statuses: list[int | None]) -> None:
        self.outcome = RankOutcome(rank)
        self.statuses = statuses

    def poll(self) -> int | None:
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        self.outcome.status = status
        return status


def _watched(tmp_path: Path, *scripts: list[int | None]) -> tuple[int | None, bool, str]:
    stream = io.StringIO()
    job = _Job(_spec(tmp_path, env={"HCCL_EXEC_TIMEOUT": "20"}), tmp_path, [1, 2], stream)
    job.ranks = [_ScriptedRank(i, s) for i, s in enumerate(scripts)]  # type: ignore[misc]
    failed, timed_out = job._watch(time.monotonic() + 30)
    return failed, timed_out, stream.getvalue()


def test_a_rank_failing_last_fails_the_job(tmp_path: Path) -> None:
    # Rank 1 ended well first; rank 0 then failed and was the last to end.
    failed, timed_out, said = _watched(tmp_path, [None, None, 1], [None, 0])
    assert (failed, timed_out) == (0, False)
    assert said == ""  # rank 0 ended 0.1 s after rank 1: nothing worth a remark
    # Both ranks failed between two polls.
    assert _watched(tmp_path, [None, 1], [None, 2])[:2] == (0, False)
    assert _watched(tmp_path, [None, 0], [None, 0]) == (None, False, "")


def test_a_rank_ending_well_long_before_the_others_is_remarked(tmp_path: Path, monkeypatch) -> None:
    from tf2npu.runtime.distributed import launch as launch_module

    monkeypatch.setattr(launch_module, "_EARLY_NOTE", 0.1)
    failed, timed_out, said = _watched(tmp_path, [*[None] * 8, 0], [None, 0])
    assert (failed, timed_out) == (None, False)
    assert said == (
        "tf2npu run: rank 1 exited 0 while rank(s) 0 still run; fine if they are only finishing "
        "(a checkpoint, an evaluation), but a collective they call now cannot complete\n"
    )


def test_merged_summary_reads_each_rank(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    for rank in (0, 1):
        folder = spec.report_dir / f"rank_{rank}"
        folder.mkdir(parents=True)
        own = {"steps": 8, "distributed": {"loss": 0.5 + rank,
               "collectives": {"HcomAllReduce": {"count": 4, "bytes": 64}}}}  # fmt: skip
        (folder / "run_summary.json").write_text(json.dumps(own))
    result = JobResult(0, [RankOutcome(0, 0), RankOutcome(1, 0)])
    summary = merged_summary(spec, result).to_json()  # the file the launcher writes
    assert [(r["rank"], r["steps"], r["loss"]) for r in summary["per_rank"]] == [
        (0, 8, 0.5), (1, 8, 1.5),
    ]  # fmt: skip
    # A rank summary without "tensors" (one tensor per collective) counts one per execution.
    assert summary["collectives"] == {"HcomAllReduce": {"count": 8, "bytes": 128, "tensors": 8}}
    assert (summary["exit_status"], summary["failed_rank"], summary["message"]) == (0, None, None)


# -- real jobs ------------------------------------------------------------------------------


def _alive(out: Path) -> list[int]:
    pids = [int(p.read_text()) for p in out.glob("pid_*")]
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        alive.append(pid)
    return alive


@pytest.mark.slow
def test_two_ranks_end_identical_and_match_one_process(tmp_path: Path) -> None:
    out, single = tmp_path / "out", tmp_path / "single"
    out.mkdir()
    single.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK_", "TF2NPU_CLUSTER"))}
    one = subprocess.Popen(  # the one-process reference, run alongside the job
        [sys.executable, "-m", "tf2npu", "run", "--quiet", "--report-dir", str(tmp_path / "one"),
         str(SCRIPT), str(single)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        stream = io.StringIO()
        result = launch(_spec(tmp_path, str(out)), stream)
        _, errors = one.communicate(timeout=240)
    finally:
        one.kill()
    assert result.status == 0, result.message
    assert one.returncode == 0, errors[-2000:]
    # allgather, broadcast, reduce_scatter, send/receive, a sub-group: checked in the script.
    expected = "collectives ok ['bcast', 'gather', 'group_sum', 'max', "
    assert stream.getvalue().count(expected) == 2
    assert "tfg.legacy_call" not in stream.getvalue()  # grappler's TFG is off on the ranks
    rank0, rank1 = np.load(out / "weights_0.npz"), np.load(out / "weights_1.npz")
    reference = np.load(single / "weights_0.npz")
    assert sorted(rank0) == sorted(reference) == ["dense.bias", "dense.kernel", "dense_1.bias",
                                                   "dense_1.kernel"]  # fmt: skip
    for name in rank0:
        assert rank0[name].tobytes() == rank1[name].tobytes(), name
        assert np.abs(rank0[name] - reference[name]).max() <= 1e-6, name
    assert result.summary is not None
    per_rank = result.summary.to_json()["per_rank"]
    assert [r["steps"] for r in per_rank] == [8, 8]
    # 4 gradients fused by the default split into 2 all-reduces (kernel+bias of the first
    # layer are 80.5% of the bytes) x 8 steps + 2 checks; 4 broadcasts of rank 0's variables
    # + 1 check.
    assert per_rank[0]["collectives"]["HcomAllReduce"]["count"] == 18
    assert per_rank[0]["collectives"]["HcomAllReduce"]["tensors"] == 34
    assert per_rank[1]["collectives"]["HcomBroadcast"]["count"] == 5
    assert per_rank[0]["collectives"]["HcomSend"] == {"count": 1, "bytes": 16, "tensors": 1}
    assert per_rank[1]["collectives"]["HcomReceive"] == {"count": 1, "bytes": 16, "tensors": 1}


@pytest.mark.slow
def test_a_rank_spec_that_cannot_be_read_fails_that_rank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tf2npu.runtime.distributed import launch as launch_module

    script = tmp_path / "ok.py"
    script.write_text("print('ok')\n")
    written = launch_module.write_rank_specs

    def in_the_way(spec: JobSpec) -> list[Path]:  # rank 1's file replaced by a folder
        paths = written(spec)
        paths[1].unlink()
        paths[1].mkdir()
        return paths

    monkeypatch.setattr(launch_module, "write_rank_specs", in_the_way)
    run = RunSpec(script, (), tmp_path / "report", (), npu=False, execution="host")
    stream = io.StringIO()
    result = launch(JobSpec(run, RANKS, job_timeout=240.0, grace=120.0), stream)
    path = tmp_path / "report" / "rank_1" / "run_spec.json"
    assert (result.status, result.failed) == (2, 1), stream.getvalue()[-3000:]
    assert result.message == (
        f"rank 1 exited with status 2\n  error: run spec {str(path)!r}: cannot read it: Is a "
        "directory"
    )
    assert result.outcome(0).status == 0 and "[rank 0] ok" in stream.getvalue()


def _two_free_ports_in_a_row() -> int:
    """A port P such that P and P + 1 are free (base port of ranks 0 and 1)."""
    import socket

    for _ in range(50):
        with socket.socket() as first, socket.socket() as second:
            first.bind(("", 0))
            base = first.getsockname()[1]
            try:
                second.bind(("", base + 1))
            except OSError:
                continue
            return base
    raise AssertionError("no two free ports in a row")


@pytest.mark.slow
def test_two_hosts_each_start_their_rank_and_train_together(tmp_path: Path) -> None:
    # Two launchers, as on two servers: 127.0.0.1 and 127.0.0.2 are both this machine's
    # loopback, so each "server" has its own address, as hosts of a real rank table do.
    import threading

    out = tmp_path / "out"
    out.mkdir()
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"server_list": [
        {"server_id": "127.0.0.1", "device": [{"device_id": "0", "rank_id": "0"}]},
        {"server_id": "127.0.0.2", "device": [{"device_id": "0", "rank_id": "1"}]}]}))  # fmt: skip
    port = _two_free_ports_in_a_row()
    ranks = (RankEntry(0, 0, "127.0.0.1"), RankEntry(1, 0, "127.0.0.2"))
    results: dict[str, object] = {}

    def host(server: str) -> None:
        spec = JobSpec(_run(SCRIPT, (str(out),), tmp_path / server), ranks, rank_table=table,
                       job_timeout=240.0, grace=2.0, base_port=port, host=server)  # fmt: skip
        results[server] = launch(spec, io.StringIO())

    threads = [threading.Thread(target=host, args=(s,)) for s in ("127.0.0.1", "127.0.0.2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    for server, result in results.items():
        assert result.status == 0, (server, result.message)  # type: ignore[attr-defined]
        assert [o.rank for o in result.ranks] == ([0] if server == "127.0.0.1" else [1])  # type: ignore[attr-defined]
    rank0, rank1 = np.load(out / "weights_0.npz"), np.load(out / "weights_1.npz")
    for name in rank0:
        assert rank0[name].tobytes() == rank1[name].tobytes(), name


@pytest.mark.slow
def test_estimator_and_keras_on_two_ranks_match_one_process(tmp_path: Path) -> None:
    script = SCRIPT.parent / "est_keras.py"
    out, single = tmp_path / "out", tmp_path / "single"
    out.mkdir()
    single.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK_", "TF2NPU_CLUSTER"))}
    one = subprocess.Popen(
        [sys.executable, "-m", "tf2npu", "run", "--quiet", "--report-dir", str(tmp_path / "one"),
         str(script), str(single)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        spec = JobSpec(_run(script, (str(out),), tmp_path / "report"), RANKS, job_timeout=240.0,
                       grace=2.0)  # fmt: skip
        result = launch(spec, io.StringIO())
        _, errors = one.communicate(timeout=240)
    finally:
        one.kill()
    assert result.status == 0, result.message
    assert one.returncode == 0, errors[-2000:]
    for kind in ("est", "keras"):
        rank0, rank1 = np.load(out / f"{kind}_0.npz"), np.load(out / f"{kind}_1.npz")
        reference = np.load(single / f"{kind}_0.npz")
        assert len(rank0) == (12 if kind == "est" else 4)  # Estimator: Adam's slots too
        for name in rank0:
            assert rank0[name].tobytes() == rank1[name].tobytes(), (kind, name)
            assert np.abs(rank0[name] - reference[name]).max() <= 1e-6, (kind, name)
    # train_and_evaluate's 20 steps and Keras's 8 batches, 4 gradients in 2 all-reduces each.
    assert result.summary is not None
    assert result.summary.per_rank[0].collectives["HcomAllReduce"]["tensors"] == 4 * 28


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["raise", "kill", "hang", "exit0"])
def test_a_failing_rank_ends_the_job(tmp_path: Path, fault: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    stream = io.StringIO()
    spec = _spec(tmp_path, str(out), "--fault", fault, env={"HCCL_EXEC_TIMEOUT": "5"})
    result = launch(spec, stream)
    ended = time.time()
    fault_at = float(re.search(r"FAULT \w+ at ([\d.]+)", stream.getvalue()).group(1))
    # The job ends within the exec timeout of the fault plus slack, and leaves nothing behind.
    # Quiet, it takes 5-7 s; a loaded 2-core CI run once took 25 s. A job that did not end
    # would run to the 300 s rank timeout, so 5 + 40 s still tells a stop from a hang.
    assert ended - fault_at <= 5 + 40, stream.getvalue()[-3000:]
    assert _alive(out) == []
    first = result.message.splitlines()[0]
    if fault == "raise":
        assert (result.status, result.failed) == (1, 1)
        assert first == "rank 1 exited with status 1"
        assert "  error: ValueError: rank 1 gave up" in result.message
    elif fault == "kill":
        assert (result.status, result.failed) == (137, 1)
        assert first == "rank 1 was killed by SIGKILL"
    elif fault == "exit0":  # rank 1 ended well; rank 0 fails in its next all-reduce
        assert result.failed == 0 and result.status in (1, 139), result.message
        assert re.search(
            r"^rank 1 had exited with status 0, [\d.]+ s before$", result.message, re.M
        )
        assert "every rank must run the same collectives" in result.message
    else:  # rank 0's run times out in the all-reduce rank 1 never reaches
        assert result.failed == 0
        if result.status == 139:  # TensorFlow's abort path can crash: 1 run in 3 when the op
            # timed out, none in 6 since the run times out; the launcher says so.
            assert first.startswith("rank 0 was killed by SIGSEGV"), first
        else:
            assert result.status == 1
            assert re.match(
                r"rank 0 exited with status 1 in collective HcomAllReduce "
                r"'\S+HcomAllReduce\w*'$",
                first,
            ), first
            assert "did not finish within HCCL_EXEC_TIMEOUT=5 s" in result.message
        assert "rank 1 was still running and was stopped (hung? it printed no error)" in (
            result.message
        )
    assert json.loads((tmp_path / "report" / "run_summary.json").read_text())["exit_status"] == (
        result.status
    )
