"""``tf.contrib.lookup`` functions whose first argument TF 2.15 renamed.

TF 1.15 contrib called the vocabulary ``mapping``; TF 2.15's ``lookup_ops`` calls it
``vocabulary_list``. Scripts pass it by keyword (``mapping=...``) often enough that a plain
alias would break them.
"""

from __future__ import annotations

from typing import Any


def index_table_from_tensor(
    mapping: Any,
    num_oov_buckets: int = 0,
    default_value: int = -1,
    hasher_spec: Any = None,
    dtype: Any = None,
    name: str | None = None,
) -> Any:
    """A table mapping each string (or integer) of ``mapping`` to its position.

    Unknown keys map to ``default_value``, or to one of ``num_oov_buckets`` hash buckets after
    the vocabulary when that is > 0. Run ``tf.tables_initializer()`` before looking up.
    """
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import lookup_ops

    if mapping is None:
        raise ValueError("mapping must be specified.")
    return lookup_ops.index_table_from_tensor(
        vocabulary_list=mapping,
        num_oov_buckets=num_oov_buckets,
        default_value=default_value,
        hasher_spec=lookup_ops.FastHashSpec if hasher_spec is None else hasher_spec,
        dtype=dtypes.string if dtype is None else dtype,
        name=name,
    )


def index_to_string_table_from_tensor(
    mapping: Any, default_value: str = "UNK", name: str | None = None
) -> Any:
    """A table mapping each int64 position to the string at that position of ``mapping``."""
    from tensorflow.python.ops import lookup_ops

    if mapping is None:
        raise ValueError("mapping must be specified.")
    return lookup_ops.index_to_string_table_from_tensor(
        vocabulary_list=mapping, default_value=default_value, name=name
    )
