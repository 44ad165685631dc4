"""Host shared memory of this process: what ``malloc_shared_memory`` allocates, by address.

The adapter allocates named host buffers for embedding tables (``npu_plugin.
malloc_shared_memory``) and the HCCL ``remote_read`` / ``remote_write`` ops move rows in and out
of them by ``[rank_id, address, length]`` triples (from ``npu_cpu_ops.embeddingrankid``). Here
a buffer is a NumPy array kept alive in :data:`_BUFFERS`; its real address is what scripts see,
and the remote ops resolve a triple to a slice of the buffer that contains it (never a raw
pointer), so a wrong address is an error, not a crash.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from npu_bridge.hccl.manage import world_rank_id

#: Buffers by name, each a flat uint8 view of its data.
_BUFFERS: dict[str, npt.NDArray[np.uint8]] = {}


def allocate(name: str, shape: tuple[int, ...], dtype: np.dtype[Any]) -> tuple[int, int]:
    """A zeroed buffer ``name`` (replacing one of the same name); returns (address, bytes)."""
    data = np.zeros(shape, dtype=dtype)
    _BUFFERS[name] = data.reshape(-1).view(np.uint8)
    return address_and_size(name)


def address_and_size(name: str) -> tuple[int, int]:
    """(address, bytes) of buffer ``name``; ``KeyError`` when there is none."""
    raw = _BUFFERS[name]
    return int(raw.ctypes.data), int(raw.nbytes)


def _locate(rank: int, address: int, length: int) -> npt.NDArray[np.uint8]:
    """The bytes ``[address, address + length)`` of a buffer of this process."""
    if rank != world_rank_id():
        raise ValueError(
            f"remote address on rank {rank}: only this process's memory (rank "
            f"{world_rank_id()}) exists here; multi-rank RDMA is not available in tf2npu"
        )
    for raw in _BUFFERS.values():
        start = int(raw.ctypes.data)
        if start <= address and address + length <= start + raw.nbytes:
            return raw[address - start : address - start + length]
    raise ValueError(
        f"address {address:#x} (+{length} bytes) is in no buffer made by malloc_shared_memory"
    )


def read_rows(remote: npt.NDArray[Any], dtype: Any) -> npt.NDArray[Any]:
    """Rows ``[rank, address, length]`` read as ``dtype`` elements, one output row each."""
    rows = [_locate(int(r), int(a), int(n)).view(dtype) for r, a, n in remote.reshape(-1, 3)]
    if not rows:
        return np.zeros([0, 0], dtype)
    return np.stack(rows)


def write_rows(remote: npt.NDArray[Any], local: npt.NDArray[Any]) -> None:
    """Write row ``i`` of ``local`` to the ``i``-th ``[rank, address, length]`` of ``remote``."""
    triples = remote.reshape(-1, 3)
    values = local.reshape(len(triples), -1)
    for (rank, address, length), row in zip(triples, values, strict=True):
        target = _locate(int(rank), int(address), int(length))
        source = np.ascontiguousarray(row).view(np.uint8)
        if source.nbytes != target.nbytes:
            raise ValueError(
                f"remote_write: a row of {source.nbytes} bytes for a remote length of "
                f"{target.nbytes}"
            )
        target[:] = source
