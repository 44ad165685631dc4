"""TF 1.15's ``tf.contrib.seq2seq.sequence_loss``: weighted cross-entropy over a sequence.

``crossent[b, t] = weights[b, t] * xent(logits[b, t], targets[b, t])``, then reduced:
averaging divides the sum by the sum of the weights (``div_no_nan``: 0 for all-zero weights),
summing (``sum_over_*``) divides by the number of non-zero weights, over the batch, the time
steps, both, or neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow.compat.v1 as tf


def _check_args(
    logits: Any, targets: Any, weights: Any, avg_t: bool, avg_b: bool, sum_t: bool, sum_b: bool
) -> None:
    for what, tensor, rank, shape in (
        ("Logits", logits, 3, "[batch_size x sequence_length x logits]"),
        ("Targets", targets, 2, "[batch_size x sequence_length]"),
        ("Weights", weights, 2, "[batch_size x sequence_length]"),
    ):
        if len(tensor.get_shape()) != rank:
            raise ValueError(f"{what} must be a {shape} tensor")
    if avg_t and sum_t:
        raise ValueError(
            "average_across_timesteps and sum_over_timesteps cannot be set to True at same time."
        )
    if avg_b and sum_b:
        raise ValueError(
            "average_across_batch and sum_over_batch cannot be set to True at same time."
        )


def sequence_loss(
    logits: Any,
    targets: Any,
    weights: Any,
    average_across_timesteps: bool = True,
    average_across_batch: bool = True,
    sum_over_timesteps: bool = False,
    sum_over_batch: bool = False,
    softmax_loss_function: Callable[..., Any] | None = None,
    name: str | None = None,
) -> Any:
    """Weighted cross-entropy of ``logits`` ``[B, T, V]`` against ``targets`` ``[B, T]``.

    Returns a scalar, ``[T]`` (reduced over the batch), ``[B]`` (over time) or ``[B, T]``.

    Raises:
        ValueError: a tensor of the wrong rank, or both averaging and summing one axis.
    """
    _check_args(
        logits,
        targets,
        weights,
        average_across_timesteps,
        average_across_batch,
        sum_over_timesteps,
        sum_over_batch,
    )
    with tf.name_scope(name, "sequence_loss", [logits, targets, weights]):
        num_classes = tf.shape(logits)[2]
        logits_flat = tf.reshape(logits, [-1, num_classes])
        flat_targets = tf.reshape(targets, [-1])
        loss_fn = softmax_loss_function or tf.nn.sparse_softmax_cross_entropy_with_logits
        crossent = loss_fn(labels=flat_targets, logits=logits_flat)
        crossent *= tf.reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return tf.div_no_nan(tf.reduce_sum(crossent), tf.reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            count = tf.cast(tf.count_nonzero(weights), crossent.dtype)
            return tf.div_no_nan(tf.reduce_sum(crossent), count)
        crossent = tf.reshape(crossent, tf.shape(logits)[0:2])
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            total = tf.reduce_sum(weights, axis=axis)
            return tf.div_no_nan(tf.reduce_sum(crossent, axis=axis), total)
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            count = tf.cast(tf.count_nonzero(weights, axis=axis), dtype=crossent.dtype)
            return tf.div_no_nan(tf.reduce_sum(crossent, axis=axis), count)
        return crossent
