"""The job's ranks: who this process is among how many, read once from the environment.

Ascend jobs describe themselves with environment variables their launch scripts export
(``RANK_SIZE``, ``RANK_ID``, ``DEVICE_ID``, ``RANK_TABLE_FILE``, ``JOB_ID``) and an HCCL rank
table (JSON, the v1.0 ``server_list`` layout or the older ``group_list`` one). :class:`Cluster`
is the one reader of those facts; ``npu_bridge.hccl``, the optimizers, hooks and the runtime
ask it instead of reading the variables themselves. ``tf2npu run --ranks N`` adds the private
:data:`ADDRESSES_VARIABLE` (the gRPC address of every rank) so each rank can reach the others.

With one rank (``RANK_SIZE`` unset or 1) the cluster is the single-rank identity; nothing
else is read. Nothing here imports TensorFlow.

Example:
    >>> c = Cluster.from_env({"RANK_SIZE": "2", "RANK_ID": "1", "DEVICE_ID": "5"})
    >>> (c.rank, c.size, c.device_id, c.distributed)
    (1, 2, 5, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tf2npu.config.env import ADDRESSES_VARIABLE
from tf2npu.config.jsonfile import load_json
from tf2npu.errors import ConfigError

__all__ = [
    "ADDRESSES_VARIABLE",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_EXEC_TIMEOUT",
    "JOB",
    "Cluster",
    "RankEntry",
    "cpu_device",
    "current",
    "load_rank_table",
    "parse_rank_table",
]

#: The TensorFlow job name of the ranks (task k = rank k).
JOB = "worker"
#: HCCL's defaults, in seconds (``HCCL_CONNECT_TIMEOUT``, ``HCCL_EXEC_TIMEOUT``).
DEFAULT_CONNECT_TIMEOUT = 120.0
DEFAULT_EXEC_TIMEOUT = 1800.0


@dataclass(frozen=True)
class RankEntry:
    """One rank of a rank table."""

    rank_id: int
    device_id: int
    server_id: str = ""
    device_ip: str = ""


@dataclass(frozen=True)
class Cluster:
    """This process's place in the job (see the module docstring)."""

    rank: int = 0
    """``RANK_ID``; in ``0..size-1`` when ``size`` > 1 (a one-rank job keeps the value given)."""
    size: int = 1
    device_id: int = 0
    job_id: str = ""
    rank_table: str = ""
    """``RANK_TABLE_FILE`` as given ("" = none)."""
    ranks: tuple[RankEntry, ...] = ()
    """The rank table's entries in rank order (empty without a table)."""
    addresses: tuple[str, ...] = ()
    """gRPC ``host:port`` of every rank (empty unless started by ``tf2npu run --ranks``)."""
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    """``HCCL_CONNECT_TIMEOUT``: how long the ranks wait for each other at start-up."""
    exec_timeout: float = DEFAULT_EXEC_TIMEOUT
    """``HCCL_EXEC_TIMEOUT``: how long a collective waits for the other ranks."""

    @property
    def distributed(self) -> bool:
        """More than one rank."""
        return self.size > 1

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Cluster:
        """The cluster ``env`` describes.

        ``RANK_SIZE`` (else ``CM_WORKER_SIZE``; both set is an error), ``RANK_ID`` (else
        ``POD_NAME``), ``ASCEND_DEVICE_ID`` (else ``DEVICE_ID``), ``JOB_ID``,
        ``RANK_TABLE_FILE`` (read only with more than one rank: it must list ``RANK_SIZE``
        ranks, and gives the device id when no variable does), the HCCL timeouts and
        :data:`ADDRESSES_VARIABLE` (one address per rank).

        Raises:
            ConfigError: a value that is not a number, out of range, or disagrees with another.
        """
        size = _size(env)
        rank = _first_int(env, ("RANK_ID", "POD_NAME"), 0)
        if size > 1 and not 0 <= rank < size:
            raise ConfigError(
                f"RANK_ID={rank} is not a rank of this job (RANK_SIZE={size}); set RANK_ID "
                f"to 0..{size - 1}"
            )
        table = env.get("RANK_TABLE_FILE", "")
        ranks = _table_ranks(table, size) if size > 1 and table else ()
        device = _first_int(
            env, ("ASCEND_DEVICE_ID", "DEVICE_ID"), ranks[rank].device_id if ranks else 0
        )
        return cls(
            rank=rank,
            size=size,
            device_id=device,
            job_id=env.get("JOB_ID", ""),
            rank_table=table,
            ranks=ranks,
            addresses=_addresses(env, size),
            connect_timeout=_seconds(env, "HCCL_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT),
            exec_timeout=_seconds(env, "HCCL_EXEC_TIMEOUT", DEFAULT_EXEC_TIMEOUT),
        )


def cpu_device(rank: int) -> str:
    """The CPU device of rank ``rank`` in a multi-rank job (where its ops and collectives run).

    >>> cpu_device(1)
    '/job:worker/replica:0/task:1/device:CPU:0'
    """
    return f"/job:{JOB}/replica:0/task:{rank}/device:CPU:0"


def _optional_int(env: Mapping[str, str], name: str) -> int | None:
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        example = 1 if name.endswith("SIZE") else 0
        raise ConfigError(
            f"environment variable {name}={text!r} is not an integer; set it to a number, "
            f"e.g. {name}={example}, or unset it"
        ) from None
    if value < 0:
        raise ConfigError(f"environment variable {name}={value} is negative; give 0 or more")
    return value


def _first_int(env: Mapping[str, str], names: Sequence[str], default: int) -> int:
    """The first of the variables ``names`` that is set, as an int; else ``default``."""
    for name in names:
        value = _optional_int(env, name)
        if value is not None:
            return value
    return default


def _size(env: Mapping[str, str]) -> int:
    given = [name for name in ("RANK_SIZE", "CM_WORKER_SIZE") if env.get(name, "").strip()]
    if len(given) == 2:
        raise ConfigError(
            f"RANK_SIZE={env['RANK_SIZE']!r} and CM_WORKER_SIZE={env['CM_WORKER_SIZE']!r} are "
            "both set; the adapter cannot tell which describes the job: unset one of them"
        )
    size = _first_int(env, given, 1)
    if size < 1:
        raise ConfigError(f"{given[0]}={size} must be >= 1; set it to the number of ranks")
    return size


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(
            f"environment variable {name}={text!r} is not a positive number of seconds; "
            f"set e.g. {name}={int(default)} or unset it"
        )
    return value


def _addresses(env: Mapping[str, str], size: int) -> tuple[str, ...]:
    text = env.get(ADDRESSES_VARIABLE, "").strip()
    if not text:
        return ()
    addresses = tuple(a.strip() for a in text.split(","))
    bad = [a for a in addresses if a.rpartition(":")[2].isdigit() is False]
    if len(addresses) != size or bad:
        raise ConfigError(
            f"{ADDRESSES_VARIABLE}={text!r} must list {size} host:port addresses (one per rank "
            f"of RANK_SIZE={size}); tf2npu run --ranks sets it (set it by hand only to re-run "
            "the ranks of a job: docs/distributed.md, Re-running a rank)"
        )
    return addresses


def _table_ranks(path: str, size: int) -> tuple[RankEntry, ...]:
    ranks = load_rank_table(path)
    if len(ranks) != size:
        raise ConfigError(
            f"RANK_TABLE_FILE {path!r} lists {len(ranks)} ranks but RANK_SIZE={size}; make "
            "them agree"
        )
    return ranks


def load_rank_table(path: str | Path) -> tuple[RankEntry, ...]:
    """The ranks of the HCCL rank table file ``path``, in rank order.

    Raises:
        ConfigError: unreadable or invalid JSON, or a table :func:`parse_rank_table` rejects.
    """
    return parse_rank_table(load_json(path, "rank table"), f"rank table {str(path)!r}")


def parse_rank_table(data: object, where: str = "rank table") -> tuple[RankEntry, ...]:
    """The ranks of a rank table's JSON, in rank order.

    Two layouts exist: v1.0 (``{"version": "1.0", "server_list": [{"server_id", "device":
    [{"device_id", "device_ip", "rank_id"}]}]}``, also wrapped in ``server_group_list``) and
    the older ``{"group_list": [{"instance_list": [{"rank_id", "server_id", "devices":
    [{"device_id", "device_ip"}]}]}]}``. Rank ids must be exactly ``0..N-1``.

    Raises:
        ConfigError: neither layout, a missing or non-numeric field, or bad rank ids.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a JSON object with server_list or group_list")
    if "server_group_list" in data:
        groups = _list(data, "server_group_list", where)
        servers = [s for g in groups for s in _list(g, "server_list", where)]
        ranks = _server_ranks(servers, where)
    elif "server_list" in data:
        ranks = _server_ranks(_list(data, "server_list", where), where)
    elif "group_list" in data:
        ranks = _group_ranks(_list(data, "group_list", where), where)
    else:
        raise ConfigError(
            f"{where}: has neither 'server_list' (v1.0 layout) nor 'group_list' (older "
            "layout); give an HCCL rank table"
        )
    ranks.sort(key=lambda r: r.rank_id)
    ids = [r.rank_id for r in ranks]
    if not ids or ids != list(range(len(ids))):
        raise ConfigError(
            f"{where}: rank_ids must be 0..{max(len(ids) - 1, 0)} once each, got {ids}"
        )
    return tuple(ranks)


def _server_ranks(servers: Sequence[object], where: str) -> list[RankEntry]:
    ranks = []
    for server in servers:
        server_id = str(_dict(server, where).get("server_id", ""))
        for device in _list(server, "device", where):
            fields = _dict(device, where)
            ranks.append(
                RankEntry(
                    rank_id=_number(fields, "rank_id", where),
                    device_id=_number(fields, "device_id", where),
                    server_id=server_id,
                    device_ip=str(fields.get("device_ip", "")),
                )
            )
    return ranks


def _group_ranks(groups: Sequence[object], where: str) -> list[RankEntry]:
    ranks = []
    for group in groups:
        for instance in _list(group, "instance_list", where):
            fields = _dict(instance, where)
            devices = _list(instance, "devices", where)
            if len(devices) != 1:
                raise ConfigError(
                    f"{where}: instance with rank_id {fields.get('rank_id')!r} lists "
                    f"{len(devices)} devices; give one device per instance"
                )
            device = _dict(devices[0], where)
            ranks.append(
                RankEntry(
                    rank_id=_number(fields, "rank_id", where),
                    device_id=_number(device, "device_id", where),
                    server_id=str(fields.get("server_id", "")),
                    device_ip=str(device.get("device_ip", "")),
                )
            )
    return ranks


def _dict(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected an object, got {value!r}")
    return value


def _list(value: object, key: str, where: str) -> list[object]:
    items = _dict(value, where).get(key)
    if not isinstance(items, list):
        raise ConfigError(f"{where}: {key!r} must be a list, got {items!r}")
    return items


def _number(fields: Mapping[str, object], key: str, where: str) -> int:
    value = fields.get(key)
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not text.isdigit():
        raise ConfigError(f'{where}: {key!r} = {value!r} must be a number such as "0"')
    return int(text)


_VARIABLES = (
    "RANK_SIZE",
    "CM_WORKER_SIZE",
    "RANK_ID",
    "POD_NAME",
    "ASCEND_DEVICE_ID",
    "DEVICE_ID",
    "JOB_ID",
    "RANK_TABLE_FILE",
    "HCCL_CONNECT_TIMEOUT",
    "HCCL_EXEC_TIMEOUT",
    ADDRESSES_VARIABLE,
)
_cache: dict[tuple[str | None, ...], Cluster] = {}


def current(env: Mapping[str, str] | None = None) -> Cluster:
    """The cluster of ``env`` (default ``os.environ``), re-read only when a variable changed.

    Scripts set ``os.environ["RANK_SIZE"]`` themselves before building their graphs, so the
    answer follows the environment instead of being fixed at start-up.
    """
    import os

    source = os.environ if env is None else env
    key = tuple(source.get(name) for name in _VARIABLES)
    found = _cache.get(key)
    if found is None:
        found = Cluster.from_env(source)
        if len(_cache) > 64:
            _cache.clear()
        _cache[key] = found
    return found
