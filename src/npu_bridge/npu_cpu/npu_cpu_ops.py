"""``npu_cpu_ops``: AI-CPU ops scripts call, built from TensorFlow ops that compute them here.

The real adapter's CPU kernels for these ops are empty stubs (the device computes them); the
semantics below are the op documentation's, computed by stock TensorFlow ops:

* :func:`randomchoicewithmask` (``RandomChoiceWithMask``): the indices of the true elements of
  ``x`` in a random order, ``count`` of them (zero-padded), and a mask of the valid rows.
* :func:`embeddingrankid` (``EmbeddingRankId``): for each embedding row id, the server that
  holds the row and the row's address there, from a table of per-server memory segments.

Example:
    >>> import tensorflow as tf
    >>> with tf.Graph().as_default():
    ...     y, mask = randomchoicewithmask(tf.constant([True, False, True]), count=4, seed=1)
    ...     with tf.compat.v1.Session() as sess:
    ...         y_value, mask_value = sess.run([y, mask])
    >>> sorted(y_value[:2, 0].tolist()), mask_value.tolist()
    ([0, 2], [True, True, False, False])
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["embeddingrankid", "randomchoicewithmask"]

_MODES = ("mod", "order")


def randomchoicewithmask(x: Any, count: int, seed: int = 0, seed2: int = 0) -> tuple[Any, Any]:
    """Up to ``count`` indices of the true elements of ``x``, shuffled; and which rows are valid.

    Returns ``y`` (int32, ``[count, rank(x)]``; rows past the number of true elements are 0)
    and ``mask`` (bool, ``[count]``). ``count=0`` returns every true element (then the first
    dimension is dynamic). ``seed``/``seed2`` non-zero make the order reproducible; both 0
    draw a fresh order each run, as the op documents.

    Raises:
        TypeError: ``x`` is not bool. ValueError: ``count`` is not an int >= 0, or ``x`` is
            a scalar or has more than 5 dimensions.
    """
    x = tf.convert_to_tensor(x, name="x")
    if x.dtype != tf.bool:
        raise TypeError(
            f"randomchoicewithmask: x is {x.dtype.name}; it must be bool, e.g. "
            "tf.greater(scores, 0.5)"
        )
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(
            f"randomchoicewithmask: count={count!r} must be an int >= 0 (an attribute of the op, "
            "not a tensor); 0 returns every true element"
        )
    rank = x.shape.rank
    if rank is not None and not 1 <= rank <= 5:
        raise ValueError(f"randomchoicewithmask: x has rank {rank}; give a tensor of rank 1 to 5")
    with tf.name_scope("RandomChoiceWithMask"):
        # RandomShuffle with both seeds 0 draws a fresh order per run, as the op documents.
        shuffled = tf.raw_ops.RandomShuffle(value=tf.where(x), seed=seed, seed2=seed2)
        found = tf.cast(shuffled, tf.int32)
        if count == 0:
            return found, tf.ones(tf.shape(found)[:1], tf.bool)
        taken = found[:count]
        valid = tf.shape(taken)[0]
        y = tf.pad(taken, [[0, count - valid], [0, 0]])
        y.set_shape([count, rank])
        mask = tf.range(count) < valid
        return y, mask


def embeddingrankid(addr_tensor: Any, index: Any, row_memory: int = 320, mode: str = "mod") -> Any:
    """Where each embedding row lives: ``[rank_id, row_address, row_memory]`` per id (uint64).

    ``addr_tensor`` is ``[servers, 3]`` uint64 rows ``[rank_id, base_address, size_bytes]``, one
    per server's memory segment; ``row_memory`` the bytes of one row. ``mode="mod"`` deals rows
    out round-robin (row ``i`` on server ``i % servers``, at position ``i // servers``);
    ``mode="order"`` fills each server in turn (``size_bytes // row_memory`` rows each).

    Raises:
        ValueError: ``row_memory`` not a positive int, an unknown ``mode``, or an
            ``addr_tensor`` whose last dimension is not 3. TypeError: a bad ``index`` dtype.
    """
    if not isinstance(row_memory, int) or isinstance(row_memory, bool) or row_memory <= 0:
        raise ValueError(f"embeddingrankid: row_memory={row_memory!r} must be an int > 0 (bytes)")
    if mode not in _MODES:
        raise ValueError(f"embeddingrankid: mode={mode!r}; use one of: {', '.join(_MODES)}")
    table = tf.convert_to_tensor(addr_tensor, dtype=tf.uint64, name="addr_table")
    shape = table.shape
    if shape.rank is not None and (shape.rank != 2 or shape[-1] not in (3, None)):
        raise ValueError(
            f"embeddingrankid: addr_tensor has shape {table.shape}; it must be [servers, 3] "
            "rows of [rank_id, base_address, size_bytes]"
        )
    ids = tf.convert_to_tensor(index, name="index")
    if ids.dtype not in (tf.int32, tf.int64, tf.uint64):
        raise TypeError(f"embeddingrankid: index is {ids.dtype.name}; use int32, int64 or uint64")
    with tf.name_scope("EmbeddingRankId"):
        # Addresses and ids stay far below 2**63, and int64 has every arithmetic kernel.
        table = tf.cast(table, tf.int64)
        ids = tf.reshape(tf.cast(ids, tf.int64), [-1])
        server, row = _server_and_row(table, ids, row_memory, mode)
        entry = tf.gather(table, server)
        address = entry[:, 1] + row * row_memory
        length = tf.fill(tf.shape(ids), tf.constant(row_memory, tf.int64))
        out = tf.stack([entry[:, 0], address, length], axis=1)
        return tf.cast(out, tf.uint64)


def _server_and_row(table: Any, ids: Any, row_memory: int, mode: str) -> tuple[Any, Any]:
    if mode == "mod":
        servers = tf.cast(tf.shape(table)[0], tf.int64)
        return ids % servers, ids // servers
    rows = table[:, 2] // row_memory
    ends = tf.cumsum(rows)
    server = tf.searchsorted(ends, ids, side="right", out_type=tf.int64)
    starts = ends - rows
    return server, ids - tf.gather(starts, server)
