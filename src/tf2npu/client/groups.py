"""The groups of a multi-rank job's collectives and the keys every rank gives them alike.

TensorFlow matches a collective across ranks by ``(group_key, instance_key)``, and the group
leader caches what it learnt about each key **for the life of the process** (shape, dtype,
kind). So keys are never counted per graph: an Estimator's eval graph would reuse the train
graph's numbers for other tensors ("Shape mismatch in the collective instance"). An instance
key is a hash of what every rank knows alike about the op: its kind, its graph-unique node name,
static shape, dtype and group; a collision inside one graph is re-salted the same way on every
rank. Ranks must therefore build the same collectives under the same names, as data-parallel
scripts do.

Group keys: :data:`WORLD_GROUP_KEY` (1) is the world group, ``create_group`` groups hash their
name and members into ``[2**20, 2**30)``, and a point-to-point pair ``(src, dst)`` is
``2 + src * size + dst``.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tf2npu.config import cluster as cluster_lib
from tf2npu.config.cluster import Cluster
from tf2npu.config.env import ADDRESSES_VARIABLE
from tf2npu.errors import Tf2NpuError
from tf2npu.graph.npu_ops.hcom import KEY_BASE, KEY_SPAN

__all__ = [
    "WORLD_GROUP_KEY",
    "Group",
    "group_key",
    "instance_key",
    "pair_group",
    "pair_key",
    "require_cluster",
]

#: Group key of the world group (every rank); sub-groups and pairs get their own.
WORLD_GROUP_KEY = 1

_GROUP_BASE, _GROUP_SPAN = 1 << 20, (1 << 30) - (1 << 20)


@dataclass(frozen=True)
class Group:
    """A group as TensorFlow's collectives see it."""

    name: str
    members: tuple[int, ...]
    """World ranks, in group-rank order."""
    key: int
    rank: int
    """This process's rank in the group."""

    @property
    def size(self) -> int:
        return len(self.members)


def require_cluster(what: str) -> Cluster:
    """The job's cluster, when ``what`` (a collective) can reach the other ranks.

    Raises:
        Tf2NpuError: more than one rank, but not started by ``tf2npu run --ranks``.
    """
    cluster = cluster_lib.current()
    if cluster.distributed and not cluster.addresses:
        raise Tf2NpuError(
            f"{what}: RANK_SIZE={cluster.size} asks for {cluster.size} ranks, but this process "
            f"was not started by the launcher ({ADDRESSES_VARIABLE} is unset), so it cannot "
            f"reach the other ranks; run tf2npu run --ranks {cluster.size} SCRIPT, or set "
            "RANK_SIZE=1 for one rank"
        )
    return cluster


def group_key(name: str, members: Sequence[int], world_group: str) -> int:
    """TensorFlow's group key of HCCL group ``name`` (the same on every rank)."""
    if name == world_group:
        return WORLD_GROUP_KEY
    digest = hashlib.sha256(repr((name, tuple(members))).encode()).digest()
    return _GROUP_BASE + int.from_bytes(digest[:8], "big") % _GROUP_SPAN


_USED: weakref.WeakKeyDictionary[Any, set[int]] = weakref.WeakKeyDictionary()


def instance_key(graph: Any, *parts: object) -> int:
    """A key from ``parts`` that no other collective of ``graph`` has (see the module doc)."""
    used = _USED.setdefault(graph, set())
    salt = 0
    while True:
        digest = hashlib.sha256(repr((parts, salt)).encode()).digest()
        key = KEY_BASE + int.from_bytes(digest[:8], "big") % KEY_SPAN
        if key not in used:  # the same salts on every rank give the same key
            used.add(key)
            return key
        salt += 1


def pair_group(src: int, dst: int, cluster: Cluster) -> Group:
    """The two-member group of world ranks ``src`` -> ``dst`` (the sender is member 0)."""
    members = (src, dst)
    return Group(
        f"pair:{src}:{dst}", members, 2 + src * cluster.size + dst, members.index(cluster.rank)
    )


def pair_key(src: int, dst: int, sr_tag: int, shape: object, dtype: object) -> int:
    """The instance key of a send/receive pair: both sides derive it from what they both know
    (not from node names, which differ)."""
    digest = hashlib.sha256(repr(("p2p", src, dst, sr_tag, shape, dtype)).encode()).digest()
    return KEY_BASE + int.from_bytes(digest[:8], "big") % KEY_SPAN
