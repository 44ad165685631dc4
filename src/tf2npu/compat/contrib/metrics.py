"""``tf.contrib.metrics`` streaming metrics that TF 2.15's ``tf.compat.v1.metrics`` lacks.

Two kinds: contrib's ``streaming_<metric>(predictions, labels, ...)`` spellings of
``tf.metrics.<metric>(labels, predictions, ...)``, where only the argument order differs (a
plain alias would silently swap labels and predictions in positional calls), and
``streaming_concat`` / ``streaming_pearson_correlation``, which ALBERT's STS-B evaluation uses
and TF 2.15 no longer has. Like every TF 1 metric they return ``(value, update_op)`` and keep
their state in local variables (LOCAL_VARIABLES and METRIC_VARIABLES), which
``tf.local_variables_initializer()`` resets.
"""

from __future__ import annotations

from typing import Any

_Pair = tuple[Any, Any]


def _swap(metric: str) -> Any:
    def streaming(predictions: Any, labels: Any, weights: Any = None, **kwargs: Any) -> _Pair:
        import tensorflow.compat.v1 as tf

        fn = getattr(tf.metrics, metric)
        return fn(labels=labels, predictions=predictions, weights=weights, **kwargs)  # type: ignore[no-any-return]

    streaming.__name__ = f"streaming_{metric}"
    streaming.__doc__ = (
        f"tf.metrics.{metric} with contrib's argument order (predictions, labels, weights, ...)."
    )
    return streaming


streaming_accuracy = _swap("accuracy")
streaming_precision = _swap("precision")
streaming_recall = _swap("recall")
streaming_auc = _swap("auc")
streaming_mean_squared_error = _swap("mean_squared_error")
streaming_mean_absolute_error = _swap("mean_absolute_error")


def _local(tf: Any, name: str, **kwargs: Any) -> Any:
    keys = [tf.GraphKeys.LOCAL_VARIABLES, tf.GraphKeys.METRIC_VARIABLES]
    return tf.get_variable(name, trainable=False, collections=keys, **kwargs)


def _publish(
    tf: Any, value: Any, update: Any, metrics_collections: Any, updates_collections: Any
) -> _Pair:
    if metrics_collections:
        tf.add_to_collections(metrics_collections, value)
    if updates_collections:
        tf.add_to_collections(updates_collections, update)
    return value, update


def streaming_concat(
    values: Any,
    axis: int = 0,
    max_size: int | None = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> _Pair:
    """All ``values`` seen so far, concatenated along ``axis`` (the only dynamic dimension).

    ``max_size`` only preallocated memory in TF 1.15 and is accepted and has no effect here.

    Raises:
        ValueError: ``values`` has unknown rank, or ``axis`` is out of range.
    """
    import tensorflow.compat.v1 as tf

    with tf.variable_scope(name, "streaming_concat", [values]):
        values = tf.convert_to_tensor(values)
        rank = values.shape.ndims
        if rank is None:
            raise ValueError(f"streaming_concat: values {values.name} must have a known rank")
        if not -rank <= axis < rank:
            raise ValueError(f"streaming_concat: axis={axis} is out of range for rank {rank}")
        axis %= rank
        empty = [0 if i == axis else d for i, d in enumerate(values.shape.as_list())]
        if None in empty:
            raise ValueError(
                f"streaming_concat: values {values.name} may only be dynamic "
                f"along axis {axis}, got shape {values.shape}"
            )
        seen = _local(tf, "values", initializer=tf.zeros(empty, values.dtype), validate_shape=False)
        update = tf.assign(seen, tf.concat([seen, values], axis), validate_shape=False)
        value = tf.identity(seen)
        return _publish(tf, value, update, metrics_collections, updates_collections)


def streaming_pearson_correlation(
    predictions: Any,
    labels: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> _Pair:
    """Pearson's r between ``predictions`` and ``labels`` over every batch seen (weighted).

    Keeps weighted sums (count, x, y, x², y², xy) in float32, as TF 1.15 kept co-moments;
    the covariance normalisation cancels in r, so the value is the same up to rounding.
    """
    import tensorflow.compat.v1 as tf

    with tf.variable_scope(name, "pearson_r", [predictions, labels, weights]):
        x = tf.reshape(tf.cast(predictions, tf.float32), [-1])
        y = tf.reshape(tf.cast(labels, tf.float32), [-1])
        w = (
            tf.ones_like(x)
            if weights is None
            else tf.reshape(
                tf.broadcast_to(tf.cast(weights, tf.float32), tf.shape(predictions)), [-1]
            )
        )
        batch = tf.stack(
            [
                tf.reduce_sum(w),
                tf.reduce_sum(w * x),
                tf.reduce_sum(w * y),
                tf.reduce_sum(w * x * x),
                tf.reduce_sum(w * y * y),
                tf.reduce_sum(w * x * y),
            ]
        )
        sums = _local(tf, "sums", shape=[6], initializer=tf.zeros_initializer())

        def pearson(s: Any) -> Any:
            n, sx, sy, sxx, syy, sxy = tf.unstack(s)
            cov = sxy - sx * sy / n
            return tf.truediv(cov, tf.sqrt(sxx - sx * sx / n) * tf.sqrt(syy - sy * sy / n))

        value = pearson(tf.identity(sums))
        update = pearson(tf.assign_add(sums, batch))
        return _publish(tf, value, update, metrics_collections, updates_collections)
