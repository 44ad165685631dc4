"""client.groups: group keys, stable instance keys, pairs, and the cluster a collective needs."""

from __future__ import annotations

import pytest
import tensorflow as tf

from tf2npu.client import groups
from tf2npu.config.cluster import Cluster
from tf2npu.errors import Tf2NpuError


def test_group_keys() -> None:
    assert groups.group_key("hccl_world_group", (0, 1), "hccl_world_group") == 1
    key = groups.group_key("g", (0, 2), "hccl_world_group")
    assert key == groups.group_key("g", (0, 2), "hccl_world_group")  # every rank alike
    assert key != groups.group_key("g", (0, 1), "hccl_world_group")
    assert 2**20 <= key < 2**30


def test_instance_keys_are_stable_and_unique_per_graph() -> None:
    first, second = tf.Graph(), tf.Graph()
    a = groups.instance_key(first, "HcomAllReduce", "x", "(2,)", "float32", 1)
    b = groups.instance_key(first, "HcomAllReduce", "x", "(2,)", "float32", 1)  # collides
    assert a != b and min(a, b) >= 2**24
    # A new graph (an Estimator's eval graph) gives the same op the same key again.
    assert groups.instance_key(second, "HcomAllReduce", "x", "(2,)", "float32", 1) == a
    assert groups.instance_key(second, "HcomAllReduce", "x", "(3,)", "float32", 1) != a


def test_a_pair_is_a_two_member_group_whose_sender_is_member_0() -> None:
    cluster = Cluster(rank=2, size=4)
    assert groups.pair_group(2, 0, cluster) == groups.Group("pair:2:0", (2, 0), 2 + 2 * 4 + 0, 0)
    assert groups.pair_group(1, 2, cluster) == groups.Group("pair:1:2", (1, 2), 2 + 1 * 4 + 2, 1)
    assert groups.pair_group(1, 2, cluster).size == 2


def test_a_pair_key_is_what_both_sides_know_alike() -> None:
    key = groups.pair_key(0, 1, 5, [2], "float32")
    assert key == groups.pair_key(0, 1, 5, [2], "float32") and key >= 2**24
    assert key != groups.pair_key(0, 1, 6, [2], "float32")  # another sr_tag


@pytest.mark.usefixtures("rank_one_of_two")
def test_require_cluster_gives_the_launched_job() -> None:
    cluster = groups.require_cluster("test")
    assert (cluster.rank, cluster.size) == (1, 2)


@pytest.mark.usefixtures("rank_one_of_two")
def test_require_cluster_without_the_launcher_names_the_caller_and_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TF2NPU_CLUSTER")
    with pytest.raises(Tf2NpuError, match=r"^my_op: RANK_SIZE=2 asks for 2 ranks.*--ranks 2"):
        groups.require_cluster("my_op")
