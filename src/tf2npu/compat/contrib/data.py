"""``tf.contrib.data`` transformations that TF 2.15's ``tf.data.experimental`` dropped.

TF 1.15 deprecated them in favour of ``drop_remainder=True``; they are one-liners over it, kept
so scripts written against TF 1.x contrib run unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def batch_and_drop_remainder(batch_size: Any) -> Callable[[Any], Any]:
    """A ``Dataset.apply`` transformation: batches of exactly ``batch_size``, last one dropped."""

    def _apply(dataset: Any) -> Any:
        return dataset.batch(batch_size, drop_remainder=True)

    return _apply


def padded_batch_and_drop_remainder(
    batch_size: Any, padded_shapes: Any, padding_values: Any = None
) -> Callable[[Any], Any]:
    """A ``Dataset.apply`` transformation: ``padded_batch`` with the short last batch dropped."""

    def _apply(dataset: Any) -> Any:
        return dataset.padded_batch(
            batch_size, padded_shapes, padding_values=padding_values, drop_remainder=True
        )

    return _apply
