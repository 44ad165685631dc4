"""hccl.manage: rank helpers from RANK_SIZE / RANK_ID, groups, split strategies."""

from __future__ import annotations

import pytest

from npu_bridge.hccl import manage
from tf2npu.errors import Tf2NpuError


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for name in ("RANK_SIZE", "CM_WORKER_SIZE", "RANK_ID", "POD_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(manage, "_groups", {})
    monkeypatch.setattr(manage, "_split_strategies", {})


def test_defaults_are_one_rank() -> None:
    assert manage.get_rank_size() == 1
    assert manage.get_local_rank_size() == 1
    assert manage.get_rank_id() == 0
    assert manage.get_local_rank_id() == 0
    assert manage.get_world_rank_from_group_rank("hccl_world_group", 0) == 0
    assert manage.get_group_rank_from_world_rank(0, "hccl_world_group") == 0


def test_values_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "8")
    monkeypatch.setenv("RANK_ID", "3")
    assert manage.get_rank_size() == 8
    assert manage.get_rank_id() == 3


def test_bad_environment_values(monkeypatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "two")
    with pytest.raises(Tf2NpuError, match="RANK_SIZE='two' is not an integer"):
        manage.get_rank_size()
    monkeypatch.setenv("RANK_SIZE", "0")
    with pytest.raises(Tf2NpuError, match="RANK_SIZE=0 must be >= 1"):
        manage.get_rank_size()


def test_unknown_group_is_named() -> None:
    with pytest.raises(ValueError, match="group 'mine' does not exist; create it"):
        manage.get_rank_size("mine")


def test_create_and_destroy_group() -> None:
    manage.create_group("mine", 1, [0])
    assert manage.get_rank_size("mine") == 1
    assert manage.get_rank_id("mine") == 0
    with pytest.raises(ValueError, match="exists"):
        manage.create_group("mine", 1, [0])
    manage.destroy_group("mine")
    with pytest.raises(ValueError, match="does not exist"):
        manage.destroy_group("mine")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("g", 2, [0]), "rank_num=2 but rank_ids=\\[0\\]"),
        (("g", 1, [1]), "must be distinct world ranks in 0..0"),
        (("hccl_world_group", 1, [0]), "give a new name"),
    ],
)
def test_create_group_errors(args, message) -> None:
    with pytest.raises(ValueError, match=message):
        manage.create_group(*args)


def test_world_group_cannot_be_destroyed() -> None:
    with pytest.raises(ValueError, match="cannot be destroyed"):
        manage.destroy_group("hccl_world_group")


def test_split_strategy_default_then_by_index_then_by_size_which_wins() -> None:
    assert manage.split_strategy().describe() == "by size [96.54, 3.46] (default)"
    manage.set_split_strategy_by_idx([20, 100, 159])
    assert manage.split_strategy().describe() == (
        "by index [20, 100, 159] (set_split_strategy_by_idx)"
    )
    manage.set_split_strategy_by_size([60, 20, 20])
    manage.set_split_strategy_by_idx([1, 2])  # a split by size, once set, wins (as on the device)
    assert manage.split_strategy().describe() == (
        "by size [60, 20, 20] (set_split_strategy_by_size)"
    )
    with pytest.raises(ValueError, match="group 'nope' does not exist"):
        manage.split_strategy("nope")


def test_split_strategies_are_validated() -> None:
    with pytest.raises(ValueError, match="increasing non-negative"):
        manage.set_split_strategy_by_idx([5, 2])
    with pytest.raises(ValueError, match="summing to 100"):
        manage.set_split_strategy_by_size([50, 20])


def test_collective_group(monkeypatch) -> None:
    assert manage._collective_group(manage.WORLD_GROUP, "x") is None  # one rank: identity
    monkeypatch.setenv("CM_WORKER_SIZE", "3")
    with pytest.raises(Tf2NpuError, match="x: RANK_SIZE=3 asks for 3 ranks, but this process"):
        manage._collective_group(manage.WORLD_GROUP, "x")
    monkeypatch.setenv("TF2NPU_CLUSTER", "h:1,h:2,h:3")
    monkeypatch.setenv("RANK_ID", "2")
    group, cluster = manage._collective_group(manage.WORLD_GROUP, "x")
    assert (group.key, group.members, group.rank, cluster.rank) == (1, (0, 1, 2), 2, 2)
    manage.create_group("pair", 2, [2, 0])
    group, _ = manage._collective_group("pair", "x")
    assert (group.members, group.rank, group.key >= 2**20) == ((2, 0), 0, True)
    manage.create_group("other", 2, [0, 1])
    with pytest.raises(ValueError, match=r"this rank \(2\) is not in group 'other'"):
        manage._collective_group("other", "x")
