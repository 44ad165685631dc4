"""``npu_cpu.lru_cache``: the host-embedding LRU cache (``LruCache``) of the RDMA embedding path.

The real cache is a device-side resource that ``CacheAdd`` / ``CacheRemoteIndexToLocal``
update while RDMA moves embedding rows between hosts and the device cache
(:func:`npu_bridge.estimator.npu.npu_plugin.get_rdma_cache`). There is no device cache to
manage here, so a cache can be created (its arguments are checked) but using it raises a
:class:`~tf2npu.errors.Tf2NpuError` that says so, rather than returning made-up indices.
"""

from __future__ import annotations

from typing import Any

from tf2npu.errors import Tf2NpuError

__all__ = ["LruCache"]


class LruCache:
    """An LRU cache of embedding row ids (``cache_size`` rows, ids of ``dtype``)."""

    def __init__(self, cache_size: int = 100000, load_factor: float = 1, dtype: Any = None):
        if not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size <= 0:
            raise ValueError(f"LruCache: cache_size={cache_size!r} must be an int > 0")
        if not isinstance(load_factor, (int, float)) or not 0 < load_factor <= 1:
            raise ValueError(f"LruCache: load_factor={load_factor!r} must be in (0, 1]")
        self._cache_size = cache_size
        self._load_factor = load_factor
        self._dtype = dtype

    def cache_add(self, ids: Any) -> Any:
        """Add ``ids`` to the device cache (swap in / swap out): not available here."""
        raise _unavailable("cache_add")

    def cache_remote_index_to_local(self, ids: Any) -> Any:
        """The cache slots of ``ids``: not available here."""
        raise _unavailable("cache_remote_index_to_local")


def _unavailable(method: str) -> Tf2NpuError:
    return Tf2NpuError(
        f"LruCache.{method}: the device-side embedding cache fed over RDMA (host embedding "
        "across servers) cannot run off the device, and tf2npu does not fake its indices; "
        "for a CPU run keep the embedding table in a tf.Variable and use tf.nn.embedding_lookup"
    )
