"""What TF 1.15's contrib cells and seq2seq share, on TF 2.15's v1 RNN cell classes.

TF 2.15 keeps TF 1.15's graph-mode cells as Keras' legacy cells (``tf.compat.v1.nn.rnn_cell``):
the same ``RNNCell`` ``__call__`` (a variable scope per cell, named after the class, reused on
later calls) and the same ``LayerRNNCell`` (variables made in ``build`` under the layer's
scope). Cells written here subclass those, so ``rnn/lstm_cell/kernel`` comes out exactly as
TF 1.15 named it, and the stock cells and ours nest inside each other freely.
"""

from __future__ import annotations

from typing import Any

import tensorflow.compat.v1 as tf
from keras.src.engine import base_layer
from keras.src.layers.rnn import legacy_cells

RNNCell = tf.nn.rnn_cell.RNNCell
LayerRNNCell = legacy_cells.LayerRNNCell
LSTMStateTuple = tf.nn.rnn_cell.LSTMStateTuple
KerasLayer = base_layer.Layer  # what TF 1.15 checked output layers against

# TF 1.15's rnn_cell_impl names, which _Linear and the block cells use.
WEIGHTS_NAME = "kernel"
BIAS_NAME = "bias"


def assert_like_rnncell(name: str, cell: Any) -> None:
    """Raise ``TypeError`` unless ``cell`` has what TF 1.15 required of an RNN cell."""
    missing = [
        attr
        for attr in ("output_size", "state_size", "get_initial_state")
        if not hasattr(cell, attr)
    ]
    if not callable(cell):
        missing.append("__call__")
    if missing:
        raise TypeError(
            f"The argument {name!r} ({cell!r}) is not an RNNCell: it lacks "
            f"{', '.join(missing)}; pass a tf.nn.rnn_cell / tf.contrib.rnn cell"
        )


def zero_state_tensors(size: Any, batch_size: Any, dtype: Any) -> Any:
    """Zeros ``[batch_size] + size`` for each (nested) ``size``, as TF 1.15's zero_state."""

    static_batch = tf.get_static_value(batch_size)

    def zeros(s: Any) -> Any:
        if isinstance(s, tf.Tensor):  # a size known only at run time (memory's max_time)
            suffix = tf.reshape(tf.cast(s, tf.int32), [-1])
            static = tf.TensorShape([tf.get_static_value(s)] if s.shape.ndims == 0 else None)
        else:
            static = tf.TensorShape(s)
            suffix = tf.constant(static.as_list(), tf.int32)
        dims = tf.concat([tf.reshape(tf.cast(batch_size, tf.int32), [1]), suffix], 0)
        out = tf.zeros(dims, dtype=dtype)
        out.set_shape(tf.TensorShape([static_batch]).concatenate(static))
        return out

    return tf.nest.map_structure(zeros, size)


def transpose_batch_time(x: Any) -> Any:
    """Swap the first two axes (batch-major <-> time-major); rank < 2 is returned as is."""
    x = tf.convert_to_tensor(x)
    rank = x.shape.ndims
    if rank is not None and rank < 2:
        return x
    if rank is None:
        perm = tf.concat(([1, 0], tf.range(2, tf.rank(x))), 0)
    else:
        perm = [1, 0, *range(2, rank)]
    out = tf.transpose(x, perm)
    if rank is not None:
        out.set_shape([x.shape[1], x.shape[0], *x.shape[2:].as_list()])
    return out


def best_effort_input_batch_size(flat_input: Any) -> Any:
    """The batch size of time-major inputs: the first static one, else the dynamic one."""
    for x in flat_input:
        shape = x.shape
        if shape.rank is None:
            continue
        if shape.rank < 2:
            raise ValueError(f"Input tensor should have rank >= 2, received shape: {shape}")
        batch = tf.compat.dimension_value(shape[1])
        if batch is not None:
            return batch
    return tf.shape(flat_input[0])[1]


def _total_width(args: list[Any]) -> int:
    total = 0
    for arg in args:
        shape = arg.get_shape()
        if shape.ndims != 2:
            raise ValueError(f"linear is expecting 2D arguments: {[a.get_shape() for a in args]}")
        width = tf.compat.dimension_value(shape[1])
        if width is None:
            raise ValueError(
                f"linear expects shape[1] to be provided for shape {shape}, but saw {shape[1]}"
            )
        total += width
    return total


class Linear:
    """TF 1.15 contrib's ``_Linear``: ``concat(args) @ kernel + bias`` in the current scope.

    Variables ``<scope>/kernel`` ``[sum of widths, output_size]`` and ``<scope>/bias``
    ``[output_size]`` (zeros unless ``bias_initializer``) are made when constructed.
    """

    def __init__(
        self,
        args: Any,
        output_size: int,
        build_bias: bool,
        bias_initializer: Any = None,
        kernel_initializer: Any = None,
    ) -> None:
        if args is None or (tf.nest.is_nested(args) and not args):
            raise ValueError("`args` must be specified")
        self._is_sequence = tf.nest.is_nested(args)
        flat = list(args) if self._is_sequence else [args]
        dtype = flat[0].dtype
        self._build_bias = build_bias
        with tf.variable_scope(tf.get_variable_scope()) as outer:
            self._weights = tf.get_variable(
                WEIGHTS_NAME,
                [_total_width(flat), output_size],
                dtype=dtype,
                initializer=kernel_initializer,
            )
            if build_bias:
                with tf.variable_scope(outer) as inner:
                    inner.set_partitioner(None)
                    init = bias_initializer or tf.constant_initializer(0.0, dtype=dtype)
                    self._biases = tf.get_variable(
                        BIAS_NAME, [output_size], dtype=dtype, initializer=init
                    )

    def __call__(self, args: Any) -> Any:
        flat = list(args) if self._is_sequence else [args]
        joined = flat[0] if len(flat) == 1 else tf.concat(flat, 1)
        res = tf.matmul(joined, self._weights)
        return tf.nn.bias_add(res, self._biases) if self._build_bias else res
