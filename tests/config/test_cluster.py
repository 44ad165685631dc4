"""config.cluster: rank facts from the environment and HCCL rank tables (both layouts)."""

from __future__ import annotations

import json

import pytest

from tf2npu.config import cluster
from tf2npu.config.cluster import Cluster, RankEntry, load_rank_table, parse_rank_table
from tf2npu.errors import ConfigError

V1_TABLE = {
    "version": "1.0",
    "server_count": "2",
    "status": "completed",
    "server_list": [
        {
            "server_id": "10.0.0.1",
            "container_ip": "10.0.0.1",
            "device": [
                {"device_id": "0", "device_ip": "192.168.100.101", "rank_id": "0"},
                {"device_id": "1", "device_ip": "192.168.101.101", "rank_id": "1"},
            ],
        },
        {
            "server_id": "10.0.0.2",
            "container_ip": "10.0.0.2",
            "device": [
                {"device_id": "0", "device_ip": "192.168.100.102", "rank_id": "3"},
                {"device_id": "1", "device_ip": "192.168.101.102", "rank_id": "2"},
            ],
        },
    ],
}
GROUP_TABLE = {
    "status": "completed",
    "group_count": "1",
    "group_list": [
        {
            "group_name": "",
            "device_num": "2",
            "server_num": "1",
            "instance_count": "2",
            "instance_list": [
                {
                    "rank_id": "1",
                    "server_id": "10.0.0.1",
                    "devices": [{"device_id": "5", "device_ip": "192.168.101.101"}],
                },
                {
                    "rank_id": "0",
                    "server_id": "10.0.0.1",
                    "devices": [{"device_id": "4", "device_ip": "192.168.100.101"}],
                },
            ],
        },
    ],
}


def test_no_variables_is_one_rank() -> None:
    assert Cluster.from_env({}) == Cluster()
    assert not Cluster().distributed


def test_variables() -> None:
    c = Cluster.from_env(
        {
            "RANK_SIZE": "4",
            "RANK_ID": "2",
            "DEVICE_ID": "6",
            "JOB_ID": "77",
            "HCCL_CONNECT_TIMEOUT": "300",
            "HCCL_EXEC_TIMEOUT": "68",
            "TF2NPU_CLUSTER": "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4",
        }
    )
    assert (c.rank, c.size, c.device_id, c.job_id) == (2, 4, 6, "77")
    assert (c.connect_timeout, c.exec_timeout) == (300.0, 68.0)
    assert c.addresses == ("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4")
    assert c.distributed


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"CM_WORKER_SIZE": "3", "POD_NAME": "2"}, (2, 3, 0)),
        ({"RANK_SIZE": "2", "RANK_ID": "1", "POD_NAME": "0"}, (1, 2, 0)),
        ({"ASCEND_DEVICE_ID": "3", "DEVICE_ID": "5"}, (0, 1, 3)),
        ({"RANK_ID": "7"}, (7, 1, 0)),  # one rank keeps what it was given
    ],
)
def test_fallbacks(env: dict[str, str], expected: tuple[int, int, int]) -> None:
    c = Cluster.from_env(env)
    assert (c.rank, c.size, c.device_id) == expected


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"RANK_SIZE": "two"},
            "environment variable RANK_SIZE='two' is not an integer; set it to a number, e.g. "
            "RANK_SIZE=1, or unset it",
        ),
        ({"RANK_SIZE": "0"}, "RANK_SIZE=0 must be >= 1; set it to the number of ranks"),
        (
            {"RANK_SIZE": "2", "CM_WORKER_SIZE": "2"},
            "RANK_SIZE='2' and CM_WORKER_SIZE='2' are both set",
        ),
        (
            {"RANK_SIZE": "2", "RANK_ID": "2"},
            "RANK_ID=2 is not a rank of this job (RANK_SIZE=2); set RANK_ID to 0..1",
        ),
        ({"DEVICE_ID": "-1"}, "environment variable DEVICE_ID=-1 is negative"),
        (
            {"HCCL_EXEC_TIMEOUT": "soon"},
            "environment variable HCCL_EXEC_TIMEOUT='soon' is not a positive number of seconds",
        ),
        (
            {"RANK_SIZE": "2", "TF2NPU_CLUSTER": "127.0.0.1:1"},
            "TF2NPU_CLUSTER='127.0.0.1:1' must list 2 host:port addresses",
        ),
    ],
)
def test_bad_variables(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        Cluster.from_env(env)
    assert str(info.value).startswith(message)


def test_v1_table_in_rank_order() -> None:
    assert parse_rank_table(V1_TABLE) == (
        RankEntry(0, 0, "10.0.0.1", "192.168.100.101"),
        RankEntry(1, 1, "10.0.0.1", "192.168.101.101"),
        RankEntry(2, 1, "10.0.0.2", "192.168.101.102"),
        RankEntry(3, 0, "10.0.0.2", "192.168.100.102"),
    )


def test_server_group_list_wraps_v1() -> None:
    wrapped = {"version": "1.2", "server_group_list": [{"server_list": V1_TABLE["server_list"]}]}
    assert parse_rank_table(wrapped) == parse_rank_table(V1_TABLE)


def test_group_list_table() -> None:
    assert parse_rank_table(GROUP_TABLE) == (
        RankEntry(0, 4, "10.0.0.1", "192.168.100.101"),
        RankEntry(1, 5, "10.0.0.1", "192.168.101.101"),
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "rank table: expected a JSON object with server_list or group_list"),
        (
            {"version": "1.0"},
            "rank table: has neither 'server_list' (v1.0 layout) nor 'group_list'",
        ),
        (
            {"server_list": [{"device": [{"device_id": "0", "rank_id": "1"}]}]},
            "rank table: rank_ids must be 0..0 once each, got [1]",
        ),
        (
            {"server_list": [{"device": [{"device_id": "x", "rank_id": "0"}]}]},
            "rank table: 'device_id' = 'x' must be a number",
        ),
        ({"server_list": [{"device": "0"}]}, "rank table: 'device' must be a list, got '0'"),
        (
            {"group_list": [{"instance_list": [{"rank_id": "0", "devices": []}]}]},
            "rank table: instance with rank_id '0' lists 0 devices",
        ),
    ],
)
def test_bad_tables(data: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_rank_table(data)
    assert str(info.value).startswith(message)


def test_table_gives_device_and_must_match_size(tmp_path) -> None:
    path = tmp_path / "table.json"
    path.write_text(json.dumps(GROUP_TABLE))
    c = Cluster.from_env({"RANK_SIZE": "2", "RANK_ID": "1", "RANK_TABLE_FILE": str(path)})
    assert (c.device_id, c.rank_table, len(c.ranks)) == (5, str(path), 2)
    with pytest.raises(ConfigError, match="lists 2 ranks but RANK_SIZE=4"):
        Cluster.from_env({"RANK_SIZE": "4", "RANK_TABLE_FILE": str(path)})
    # One rank never reads the table: single-device jobs keep working with a stale one.
    assert Cluster.from_env({"RANK_TABLE_FILE": str(tmp_path / "missing.json")}).size == 1


def test_load_rank_table_errors_name_the_file(tmp_path) -> None:
    path = tmp_path / "t.json"
    path.write_text("{")
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_rank_table(path)


def test_current_follows_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "1")
    assert cluster.current().size == 1
    monkeypatch.setenv("RANK_SIZE", "3")
    assert cluster.current().size == 3
    assert cluster.current({"RANK_SIZE": "5"}).size == 5
