"""Rank and group helpers: CANN's ``hccl.manage.api`` and ``hccl.split.api``.

The real functions ask the HCCL library, which knows the cluster after collective
initialisation. Here the answers come from :mod:`tf2npu.config.cluster` (``RANK_SIZE``, else
``CM_WORKER_SIZE``, default 1; ``RANK_ID``, else ``POD_NAME``, default 0) for the world group
``"hccl_world_group"``, and from the groups created with :func:`create_group`, which are
sub-groups of the world: their collectives run among their members only.

With one rank every group has one member and the collectives are the identity; in a
``tf2npu run --ranks N`` job they are TensorFlow collective ops
(:mod:`tf2npu.client.hcom`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tf2npu.client import groups as _keys
from tf2npu.config import cluster as _cluster
from tf2npu.runtime.distributed.split import DEFAULT_SPLIT, SplitStrategy

__all__ = [
    "create_group",
    "destroy_group",
    "get_group_rank_from_world_rank",
    "get_local_rank_id",
    "get_local_rank_size",
    "get_rank_id",
    "get_rank_size",
    "get_world_rank_from_group_rank",
    "set_split_strategy_by_idx",
    "set_split_strategy_by_size",
    "split_strategy",
]

WORLD_GROUP = "hccl_world_group"

#: Groups made by create_group: name -> world rank ids (in group-rank order).
_groups: dict[str, tuple[int, ...]] = {}
#: Gradient split strategies by group and kind ("size", "idx"), as the last call of each gave.
_split_strategies: dict[str, dict[str, SplitStrategy]] = {}


def world_rank_size() -> int:
    """``RANK_SIZE`` (else ``CM_WORKER_SIZE``) as an int; 1 when unset."""
    return _cluster.current().size


def world_rank_id() -> int:
    """``RANK_ID`` (else ``POD_NAME``) as an int; 0 when unset."""
    return _cluster.current().rank


def _collective_group(group: str, what: str) -> tuple[_keys.Group, _cluster.Cluster] | None:
    """``group`` as the collectives see it, or None when it has one member (then a collective
    is the identity: the sum, max ... over one rank, or its broadcast, is the value itself).

    Raises:
        Tf2NpuError: several ranks, but the process was not started by ``tf2npu run --ranks``.
        ValueError: this rank is not a member of ``group``.
    """
    members = _members(group)
    if len(members) == 1:
        return None
    cluster = _keys.require_cluster(what)
    if cluster.rank not in members:
        raise ValueError(
            f"{what}: this rank ({cluster.rank}) is not in group {group!r} (members: "
            f"{list(members)}); only members may call its collectives"
        )
    key = _keys.group_key(group, members, WORLD_GROUP)
    return _keys.Group(group, members, key, members.index(cluster.rank)), cluster


def _members(group: object) -> tuple[int, ...]:
    """World ranks of ``group``; ``TypeError`` / ``ValueError`` for a bad or unknown name."""
    if not isinstance(group, str):
        raise TypeError(f"group={group!r} must be a string, e.g. {WORLD_GROUP!r}")
    if group == WORLD_GROUP:
        return tuple(range(world_rank_size()))
    if group not in _groups:
        known = ", ".join([WORLD_GROUP, *sorted(_groups)])
        raise ValueError(
            f"group {group!r} does not exist; create it with create_group() first "
            f"(existing groups: {known})"
        )
    return _groups[group]


def create_group(group: str, rank_num: int, rank_ids: Sequence[int]) -> None:
    """Create group ``group`` of ``rank_num`` world ranks ``rank_ids``.

    Raises:
        TypeError / ValueError: a bad name, an existing name, a count that does not match
            ``rank_ids``, or a rank id outside ``0 .. RANK_SIZE-1``.
    """
    if not isinstance(group, str) or not group or group == WORLD_GROUP:
        raise ValueError(
            f"create_group: group={group!r}; give a new name other than {WORLD_GROUP!r}"
        )
    if group in _groups:
        raise ValueError(f"create_group: group {group!r} exists; destroy_group({group!r}) first")
    ids = tuple(rank_ids)
    if rank_num != len(ids):
        raise ValueError(f"create_group: rank_num={rank_num!r} but rank_ids={list(ids)!r}")
    size = world_rank_size()
    bad = [r for r in ids if not isinstance(r, int) or not 0 <= r < size]
    if bad or len(set(ids)) != len(ids) or not ids:
        raise ValueError(
            f"create_group: rank_ids={list(ids)!r} must be distinct world ranks in 0..{size - 1} "
            f"(RANK_SIZE={size})"
        )
    _groups[group] = ids


def destroy_group(group: str) -> None:
    """Forget group ``group`` (``ValueError`` for the world group or an unknown name)."""
    if group == WORLD_GROUP:
        raise ValueError(f"destroy_group: {WORLD_GROUP!r} cannot be destroyed")
    _members(group)
    del _groups[group]
    _split_strategies.pop(group, None)


def get_rank_size(group: str = WORLD_GROUP) -> int:
    """Number of ranks in ``group``."""
    return len(_members(group))


def get_local_rank_size(group: str = WORLD_GROUP) -> int:
    """Ranks of ``group`` on this server: all of them, as one process runs here."""
    return len(_members(group))


def get_rank_id(group: str = WORLD_GROUP) -> int:
    """This process's rank in ``group``."""
    return get_group_rank_from_world_rank(world_rank_id(), group)


def get_local_rank_id(group: str = WORLD_GROUP) -> int:
    """This process's rank on its server (= :func:`get_rank_id`: one server)."""
    return get_rank_id(group)


def get_world_rank_from_group_rank(group: str, group_rank_id: int) -> int:
    """The world rank of rank ``group_rank_id`` of ``group``."""
    members = _members(group)
    if not isinstance(group_rank_id, int) or not 0 <= group_rank_id < len(members):
        raise ValueError(
            f"group_rank_id={group_rank_id!r} is not a rank of {group!r}; use 0..{len(members) - 1}"
        )
    return members[group_rank_id]


def get_group_rank_from_world_rank(world_rank_id: int, group: str) -> int:
    """The rank in ``group`` of world rank ``world_rank_id``."""
    members = _members(group)
    if world_rank_id not in members:
        raise ValueError(
            f"world rank {world_rank_id!r} is not in group {group!r} (members: {list(members)})"
        )
    return members.index(world_rank_id)


def set_split_strategy_by_idx(idxList: Sequence[int], group: str = WORLD_GROUP) -> None:
    """Cut the gradients of ``group`` into fused all-reduces after these gradient indices.

    ``[20, 100, 159]``: gradients 0–20 travel as one all-reduce, 21–100 as another, 101–159 as
    a third (the index is the gradient's position in the optimizer's list). A split by size set
    for the same group wins (see :func:`split_strategy`).
    """
    _members(group)
    idx = tuple(idxList)
    if not idx or any(not isinstance(i, int) or i < 0 for i in idx) or list(idx) != sorted(idx):
        raise ValueError(
            f"set_split_strategy_by_idx: idxList={list(idx)!r} must be increasing non-negative "
            "gradient indices, e.g. [20, 100, 159]"
        )
    strategy = SplitStrategy.by_index(idx, "set_split_strategy_by_idx")
    _split_strategies.setdefault(group, {})["idx"] = strategy


def set_split_strategy_by_size(
    dataSizeList: Sequence[int | float], group: str = WORLD_GROUP
) -> None:
    """Cut the gradients of ``group`` into fused all-reduces by shares of their bytes.

    ``[60, 20, 20]``: the first all-reduce carries the gradients up to 60% of the bytes, the
    second up to 80%, the third the rest.
    """
    _members(group)
    sizes = tuple(dataSizeList)
    if not sizes or any(s <= 0 for s in sizes) or abs(sum(sizes) - 100) > 1e-6:
        raise ValueError(
            f"set_split_strategy_by_size: dataSizeList={list(sizes)!r} must be positive "
            "percentages summing to 100, e.g. [60, 20, 20]"
        )
    strategy = SplitStrategy.by_size(sizes, "set_split_strategy_by_size")
    _split_strategies.setdefault(group, {})["size"] = strategy


def split_strategy(group: str = WORLD_GROUP) -> SplitStrategy:
    """The split the distributed optimizers use for ``group``: by size when set (it wins over
    by index, as on the device), else by index, else HCCL's default ``[96.54, 3.46]``."""
    _members(group)
    chosen = _split_strategies.get(group, {})
    return chosen.get("size") or chosen.get("idx") or DEFAULT_SPLIT
