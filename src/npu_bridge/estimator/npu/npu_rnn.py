"""``npu_rnn.npu_dynamic_rnn``: a time-major ``dynamic_rnn`` built from ``static_rnn``.

The adapter provides it because the device compiles static graphs: a ``tf.while_loop`` over time
(what ``dynamic_rnn`` builds) is replaced by the unrolled loop of ``static_rnn``. It is pure
TensorFlow (the anchor adapter's definition): unstack the time-major ``inputs`` along axis 0,
run ``tf.compat.v1.nn.static_rnn``, stack the outputs back. The results equal
``tf.compat.v1.nn.dynamic_rnn(..., time_major=True)`` with the same cell and the same default
variable scope (``rnn``), so checkpoints are interchangeable.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["npu_dynamic_rnn"]


def npu_dynamic_rnn(
    cell: Any,
    inputs: Any,
    initial_state: Any = None,
    dtype: Any = None,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[Any, Any]:
    """Run ``cell`` over time-major ``inputs`` by unrolling.

    Args:
        cell: an RNN cell (``tf.compat.v1.nn.rnn_cell.*``).
        inputs: a tensor ``[max_time, batch, ...]`` whose time dimension is known statically.
        initial_state, dtype, sequence_length, scope: as for ``tf.compat.v1.nn.static_rnn``.

    Returns:
        ``(outputs, state)``: outputs ``[max_time, batch, cell.output_size]`` and the final state.

    Raises:
        ValueError: the time dimension of ``inputs`` is not known when the graph is built.
    """
    inputs = tf.convert_to_tensor(inputs)
    steps = inputs.shape[0] if inputs.shape.rank else None
    if steps is None:
        raise ValueError(
            f"npu_dynamic_rnn: inputs {inputs.name} have shape {inputs.shape}; the time "
            "dimension (axis 0, time-major) must be known to unroll the RNN; give inputs a "
            "static max_time, e.g. pad sequences to a fixed length and pass sequence_length"
        )
    outputs, state = tf.compat.v1.nn.static_rnn(
        cell,
        tf.unstack(inputs, num=steps, axis=0),
        initial_state=initial_state,
        dtype=dtype,
        sequence_length=sequence_length,
        scope=scope,
    )
    return tf.stack(outputs, axis=0), state
