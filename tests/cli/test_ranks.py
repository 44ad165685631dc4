"""cli.ranks: ``tf2npu run --ranks N`` / ``--rank-table`` checked into a launch."""

from __future__ import annotations

import io
import json
import math
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from tf2npu.cli import ranks
from tf2npu.cli.main import build_parser
from tf2npu.cli.run import make_spec
from tf2npu.config.cluster import RankEntry
from tf2npu.config.faults import FaultSpec
from tf2npu.config.overrides import EngineOverrides, FusionOverride, KeepFp32
from tf2npu.errors import ConfigError, UsageError
from tf2npu.runtime.job import RunSpec
from tf2npu.testing.hostile import commands, finish, run_tf2npu, start_tf2npu, stop_group, wait_for


def _spec(tmp_path: Path, *flags: str, script_args: tuple[str, ...] = ("--epochs", "1")):
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    args = build_parser().parse_args(["run", *flags, str(script), *script_args])
    assert ranks.is_multi_rank(args)
    return ranks.job_spec(args, make_spec(args))


def _rank_spec(spec: Any, rank: int) -> RunSpec:
    """Rank ``rank``'s run as the launcher writes it for the child, read back."""
    from tf2npu.runtime.distributed.launch import write_rank_specs

    write_rank_specs(spec)
    path = spec.report_dir / f"rank_{rank}" / "run_spec.json"
    return RunSpec.from_json(json.loads(path.read_text()), str(path))


def test_ranks_and_forwarded_flags(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path, "--ranks", "2", "--grace", "3", "--job-timeout", "60", "--no-npu",
        "--option", "hccl_timeout=40", "--dump", str(tmp_path / "d"), "--report-dir",
        str(tmp_path / "r"), "--record",
    )  # fmt: skip
    assert spec.ranks == (RankEntry(0, 0), RankEntry(1, 1))
    assert (spec.grace, spec.job_timeout, spec.rank_table) == (3.0, 60.0, None)
    assert spec.run.script_args == ("--epochs", "1")
    assert spec.report_dir == (tmp_path / "r").resolve()
    assert spec.env == {"HCCL_EXEC_TIMEOUT": "40"}  # hccl_timeout is the collectives' timeout
    # A golden dump (--no-npu --dump DIR): one folder per rank, every rank dumps the same names.
    assert _rank_spec(spec, 1) == RunSpec(
        script=(tmp_path / "train.py").resolve(),
        script_args=("--epochs", "1"),
        report_dir=(tmp_path / "r").resolve() / "rank_1",
        options=("hccl_timeout=40",),
        npu=False,
        execution="host",
        golden_dump=(tmp_path / "d").resolve() / "rank_1",
        record=True,
        quiet=True,
    )


def test_each_rank_runs_the_job_spec_in_its_own_folders(tmp_path: Path) -> None:
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"server_list": [{"server_id": "a", "device": [
        {"device_id": "6", "rank_id": "1"}, {"device_id": "7", "rank_id": "0"}]}]}))  # fmt: skip
    keep = tmp_path / "keep.json"
    keep.write_text('{"nodes": ["dense/MatMul"]}')
    off = tmp_path / "off.json"
    off.write_text('{"off": [{"rule": "matmul_biasadd", "root": "dense/BiasAdd"}]}')
    report, dump, prof, graphs = (tmp_path.resolve() / name for name in ("r", "d", "p", "g"))
    spec = _spec(
        tmp_path, "--rank-table", str(table), "--report-dir", str(report),
        "--option", "precision_mode=allow_mix_precision", "--option", "deterministic=0",
        "--option", "profiling_mode=false", "--deterministic", "--dump", str(dump),
        "--dump-step", "1", "--profile", str(prof), "--profile-steps", "0-2",
        "--export-graph", str(graphs), "--fusion-instances", str(off), "--keep-fp32", str(keep),
        "--inject-fault", "op:dense/MatMul=nan", "--verbose",
        script_args=("--out", "ckpt_{rank}", "--dev", "{device}"),
    )  # fmt: skip
    assert _rank_spec(spec, 1) == RunSpec(
        script=(tmp_path / "train.py").resolve(),
        script_args=("--out", "ckpt_1", "--dev", "6"),
        report_dir=report / "rank_1",
        # --option deterministic=0 and profiling_mode=false give way to the flags' own, which
        # are made again for the rank's profile folder; an NPU dump's path holds DEVICE_ID.
        options=(
            "precision_mode=allow_mix_precision",
            "enable_dump=true",
            f"dump_path={dump}",
            "dump_step=1",
            "profiling_mode=true",
            f'profiling_options={{"output": "{prof / "rank_1"}"}}',
            "deterministic=1",
        ),
        npu=True,
        execution="host",
        dump_step="1",
        profile=prof / "rank_1",
        profile_steps="0-2",
        export_graph=graphs / "rank_1",
        deterministic=True,
        engine=EngineOverrides(
            FusionOverride(
                instances_off=frozenset({("matmul_biasadd", "dense/BiasAdd")}),
                source=f"--fusion-instances file {str(off)!r}",
            ),
            KeepFp32(frozenset({"dense/MatMul"}), f"--keep-fp32 file {str(keep)!r}"),
            (FaultSpec("op:dense/MatMul=nan", "op", "nan", math.nan, node="dense/MatMul"),),
        ),
        verbose=True,
        quiet=True,
    )
    assert _rank_spec(spec, 0).script_args == ("--out", "ckpt_0", "--dev", "7")


def test_the_folders_each_rank_writes_are_checked_before_the_launch(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    golden = _spec(tmp_path, "--ranks", "2", "--no-npu", "--dump", str(root / "d_{rank}"),
                   "--report-dir", str(root / "r"))  # fmt: skip
    ranks.check_rank_folders(golden, root / "d_{rank}")
    assert sorted(str(p.relative_to(root)) for p in root.glob("*/rank_*")) == [
        "d_0/rank_0", "d_1/rank_1", "r/rank_0", "r/rank_1"
    ]  # fmt: skip
    assert not (root / "d_{rank}").exists()  # the placeholder is no folder of its own
    npu = _spec(tmp_path, "--ranks", "2", "--dump", str(root / "n_{rank}"), "--profile",
                str(root / "p"), "--report-dir", str(root / "r"))  # fmt: skip
    (root / "p" / "rank_1").parent.mkdir()
    (root / "p" / "rank_1").write_text("in the way")
    with pytest.raises(UsageError) as info:
        ranks.check_rank_folders(npu, root / "n_{rank}")
    assert str(info.value) == f"--profile {str(root / 'p' / 'rank_1')!r} is a file; give a folder"
    assert (root / "n_0").is_dir() and (root / "n_1").is_dir()  # an NPU dump: DEVICE_ID inside


def test_rank_table_gives_ranks_and_devices(tmp_path: Path) -> None:
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"server_list": [{"server_id": "a", "device": [
        {"device_id": "6", "rank_id": "1"}, {"device_id": "7", "rank_id": "0"}]}]}))  # fmt: skip
    spec = _spec(tmp_path, "--rank-table", str(table))
    assert spec.ranks == (RankEntry(0, 7, "a"), RankEntry(1, 6, "a"))
    assert spec.rank_table == table.resolve()


@pytest.mark.parametrize(
    ("flags", "error", "message"),
    [
        (["--ranks", "0"], UsageError, "--ranks 0: give the number of ranks, 1 to 64 (each rank"),
        (["--ranks", "1000"], UsageError, "--ranks 1000: give the number of ranks, 1 to 64"),
        (
            ["--ranks", "2", "--job-timeout", "0"],
            UsageError,
            "--job-timeout 0: give the seconds after which every rank is stopped, a number > 0 (default 3600)",
        ),
        (
            ["--ranks", "2", "--job-timeout", "nan"],
            UsageError,
            "--job-timeout nan: give the seconds",
        ),
        (
            ["--ranks", "2", "--job-timeout", "inf"],
            UsageError,
            "--job-timeout inf: give the seconds",
        ),
        (
            ["--ranks", "2", "--grace", "nan"],
            UsageError,
            "--grace nan: give the seconds the other ranks get after one fails, a number >= 0 (default 10)",
        ),
        (["--ranks", "2", "--grace", "-1"], UsageError, "--grace -1: give the seconds"),
        (["--ranks", "2", "--base-port", "80"], UsageError, "--base-port 80: give a port in"),
        (
            ["--ranks", "3", "--rank-table", "T"],
            UsageError,
            "--ranks 3 but --rank-table 'T' lists 2 ranks",
        ),
        (["--rank-table", "BAD"], ConfigError, "rank table 'BAD': has neither 'server_list'"),
        (
            ["--ranks", "2", "--server-id", "10.0.0.1"],
            UsageError,
            "--server-id 10.0.0.1: give --rank-table (the job's servers and their devices) and "
            "--base-port",
        ),
        (
            ["--rank-table", "T", "--base-port", "30000", "--server-id", "10.0.0.9"],
            UsageError,
            "--server-id 10.0.0.9: the rank table lists servers",
        ),
    ],
)
def test_errors(tmp_path: Path, monkeypatch, flags: list[str], error: type, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("T").write_text(json.dumps({"group_list": [{"instance_list": [
        {"rank_id": "0", "devices": [{"device_id": "0"}]},
        {"rank_id": "1", "devices": [{"device_id": "1"}]}]}]}))  # fmt: skip
    Path("BAD").write_text("{}")
    with pytest.raises(error) as info:
        _spec(tmp_path, *flags)
    assert str(info.value).startswith(message)


def test_server_id_starts_that_servers_ranks_on_fixed_ports(tmp_path: Path) -> None:
    from tf2npu.runtime.distributed.launch import _addresses

    table = tmp_path / "table.json"
    table.write_text(json.dumps({"server_list": [
        {"server_id": "10.0.0.1", "device": [{"device_id": "0", "rank_id": "0"},
                                             {"device_id": "1", "rank_id": "1"}]},
        {"server_id": "10.0.0.2", "device": [{"device_id": "0", "rank_id": "2"},
                                             {"device_id": "1", "rank_id": "3"}]}]}))  # fmt: skip
    spec = _spec(tmp_path, "--rank-table", str(table), "--base-port", "30000",
                 "--server-id", "10.0.0.2")  # fmt: skip
    assert spec.size == 4 and [r.rank_id for r in spec.local_ranks] == [2, 3]
    assert _addresses(spec) == ["10.0.0.1:30000", "10.0.0.1:30001", "10.0.0.2:30002",
                                "10.0.0.2:30003"]  # fmt: skip


# -- no rank outlives the launcher: a failed start, SIGKILL, a taken --base-port -------------


@pytest.mark.parametrize(
    ("error", "why"),
    [
        (RuntimeError("can't start new thread"), "can't start new thread"),
        (PermissionError(13, "Permission denied"), "[Errno 13] Permission denied"),
    ],
    ids=["no-thread", "exec-fails"],
)
def test_a_failed_start_stops_the_ranks_already_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception, why: str
) -> None:
    from tf2npu.runtime.distributed import launch

    spec = _spec(tmp_path, "--ranks", "3", "--no-npu")
    started: list[int] = []
    real = launch._Rank.__init__

    def start(self: Any, rank: int, *rest: Any) -> None:
        if rank == 2:
            raise error
        real(self, rank, *rest)
        started.append(self.process.pid)

    monkeypatch.setattr(launch._Rank, "__init__", start)
    with pytest.raises(launch.LaunchError) as info:
        launch.launch(spec, out=io.StringIO())
    assert str(info.value) == (
        f"could not start rank 2 of 3 ({why}); the 2 rank(s) started were "
        "stopped. Start fewer ranks, or raise the process limit (ulimit -u) or free memory"
    )
    assert len(started) == 2
    for pid in started:
        assert (
            not Path(f"/proc/{pid}").exists()
            or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]
        )


@pytest.mark.slow  # starts tf2npu processes and signals them
def test_sigkill_of_the_launcher_kills_every_rank(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        "import subprocess, time\nsubprocess.Popen(['sleep', '300'])\ntime.sleep(300)\n"
    )
    started = start_tf2npu(["run", "--ranks", "2", "--no-npu", str(script)], tmp_path)
    try:
        assert wait_for(started.tag, "sleep 300", timeout=60), started.process.pid
        time.sleep(1)  # both ranks
        os.kill(started.process.pid, signal.SIGKILL)
        ended = finish(started, timeout=30, settle=5)
    finally:
        stop_group(started.process.pid)
    assert ended.code == -signal.SIGKILL
    assert commands(ended.left) == []


@pytest.mark.slow
def test_a_taken_base_port_is_named(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import tensorflow as tf\n"
        "from npu_bridge.npu_init import *\n"
        "with tf.compat.v1.Session() as s:\n"
        "    print(s.run(tf.constant(1.0)))\n"
    )
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1] - 1
        argv = ["run", "--ranks", "2", "--base-port", str(port), str(script)]
        ended = run_tf2npu(argv, tmp_path, timeout=240)
    assert (ended.left, ended.traceback) == ((), False), ended.err
    assert ended.code != 0
    assert (
        f"tf2npu run: error: --base-port {port}: 127.0.0.1:{port + 1} is taken by another "
        f"process (rank k listens on port {port}+k); give a --base-port whose ports "
        f"{port}..{port + 1} are free, or leave it out to let the system pick free ports"
    ) in ended.err


@pytest.mark.slow  # starts tf2npu processes and signals them
@pytest.mark.parametrize(
    ("signum", "code", "message"),
    [
        (signal.SIGTERM, 143, "tf2npu run: interrupted by SIGTERM\n"),
        (signal.SIGHUP, 129, "tf2npu run: interrupted by SIGHUP\n"),
        (signal.SIGINT, 130, "tf2npu run: interrupted\n"),
    ],
    ids=["sigterm", "sighup", "ctrl-c"],
)
def test_a_signal_to_the_launcher_stops_every_rank(
    tmp_path: Path, signum: int, code: int, message: str
) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        "import subprocess, time\nsubprocess.Popen(['sleep', '300'])\ntime.sleep(300)\n"
    )
    started = start_tf2npu(["run", "--ranks", "2", "--no-npu", str(script)], tmp_path)
    try:
        assert wait_for(started.tag, "sleep 300", timeout=60), "the ranks never started"
        time.sleep(1)  # both ranks
        os.kill(started.process.pid, signum)
        ended = finish(started, timeout=30)
    finally:
        stop_group(started.process.pid)
    assert (ended.code, ended.left, ended.traceback) == (code, (), False), ended.err
    assert ended.err.endswith(message)
