"""cli.ranks: ``tf2npu run --ranks N`` / ``--rank-table`` checked into a launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tf2npu.cli import ranks
from tf2npu.cli.main import build_parser
from tf2npu.cli.run import make_plan
from tf2npu.config.cluster import RankEntry
from tf2npu.errors import ConfigError, UsageError


def _spec(tmp_path: Path, *flags: str):
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    args = build_parser().parse_args(["run", *flags, str(script), "--epochs", "1"])
    assert ranks.is_multi_rank(args)
    return ranks.job_spec(args, make_plan(args))


def test_ranks_and_forwarded_flags(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path, "--ranks", "2", "--grace", "3", "--job-timeout", "60", "--no-npu",
        "--option", "hccl_timeout=40", "--dump", str(tmp_path / "d"), "--report-dir",
        str(tmp_path / "r"), "--record",
    )  # fmt: skip
    assert spec.ranks == (RankEntry(0, 0), RankEntry(1, 1))
    assert (spec.grace, spec.job_timeout, spec.rank_table) == (3.0, 60.0, None)
    assert spec.script_args == ("--epochs", "1")
    assert spec.report_dir == (tmp_path / "r").resolve()
    assert spec.env == {"HCCL_EXEC_TIMEOUT": "40"}  # hccl_timeout is the collectives' timeout
    assert spec.run_flags == (
        "--option", "hccl_timeout=40", "--no-npu", "--execution", "host",
        "--dump", str((tmp_path / "d").resolve() / "rank_{rank}"), "--record",
    )  # fmt: skip
    keep = tmp_path / "keep.json"
    keep.write_text('{"nodes": ["dense/MatMul"]}')
    npu = _spec(
        tmp_path, "--ranks", "2", "--deterministic", "--profile", str(tmp_path / "p"),
        "--keep-fp32", str(keep), "--inject-fault", "op:dense/MatMul=nan",
    )  # fmt: skip
    assert npu.run_flags == (
        "--execution", "host", "--deterministic",
        "--profile", str((tmp_path / "p").resolve() / "rank_{rank}"),
        "--keep-fp32", str(keep.resolve()), "--inject-fault", "op:dense/MatMul=nan",
    )  # fmt: skip


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
        (["--ranks", "0"], UsageError, "--ranks 0: give the number of ranks, 1 or more"),
        (["--ranks", "2", "--job-timeout", "0"], UsageError, "--job-timeout 0 / --grace 10: give"),
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
