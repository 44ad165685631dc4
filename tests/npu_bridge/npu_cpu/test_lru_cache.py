"""lru_cache: a cache can be made; using the device cache is a clear error."""

from __future__ import annotations

import pytest

from npu_bridge.npu_cpu.lru_cache import LruCache
from tf2npu.errors import Tf2NpuError


def test_construction_as_scripts_write_it_and_use_is_refused() -> None:
    cache = LruCache(cache_size=80000, dtype="int64")
    with pytest.raises(Tf2NpuError, match=r"LruCache.cache_add: the device-side embedding cache"):
        cache.cache_add([1, 2])
    with pytest.raises(Tf2NpuError, match=r"tf\.nn\.embedding_lookup"):
        cache.cache_remote_index_to_local([1])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cache_size": 0}, "cache_size=0 must be an int > 0"),
        ({"load_factor": 2}, r"load_factor=2 must be in \(0, 1\]"),
    ],
)
def test_bad_arguments(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        LruCache(**kwargs)
