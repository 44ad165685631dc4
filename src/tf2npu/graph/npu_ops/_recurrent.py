"""What the recurrent NPU ops (``DynamicRnn``, ``DynamicGruV2``, ``DynamicAUGRU``) share.

The device runs these ops in float32 inside and writes float16 results when the inputs are
float16, so the CPU bodies compute in float32 and cast back. ``seq_length`` (int32 ``[batch]``)
masks the steps past each sequence's end as the vendor's reference does: the state is carried
unchanged and ``y`` is 0 there. The attrs the device kernels do not implement are refused by
:func:`check_unsupported` with a message naming the attr, the value and what to do instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "DIRECTIONS",
    "check_unsupported",
    "compute_dtype",
    "scan_steps",
    "step_mask",
    "widened",
]

#: ``direction`` values the adapter's layers accept; only the first is emulated.
DIRECTIONS = ("UNIDIRECTIONAL", "BIDIRECTIONAL")

#: attr -> the only value the CPU bodies implement (the device kernels' limits, too).
_ONLY = {
    "direction": "UNIDIRECTIONAL",
    "cell_depth": 1,
    "keep_prob": 1.0,
    "num_proj": 0,
    "time_major": True,
    "activation": "tanh",
    "use_peephole": False,
    "cell_type": "LSTM",
    "cell_clip": -1.0,  # checked for the GRUs only: the LSTM clips
}

_WHY = {
    "direction": "run a second layer over tf.reverse(x, [0]) for the backward direction",
    "keep_prob": "apply npu_ops.dropout to the inputs or outputs instead",
    "time_major": "transpose the inputs to [time, batch, input] first",
    "num_proj": "project y with a dense layer instead",
}


def check_unsupported(op_name: str, attrs: Mapping[str, Any], names: Sequence[str]) -> None:
    """Raise ``ValueError`` for an attr in ``names`` set to a value the op cannot compute."""
    for name in names:
        want = _ONLY[name]
        value = attrs.get(name, want)
        if value != want:
            fix = _WHY.get(name, f"use {name}={want!r}")
            raise ValueError(
                f"{op_name}: {name}={value!r} is not supported (the Ascend kernel and tf2npu "
                f"implement only {name}={want!r}); {fix}"
            )


def compute_dtype(dtype: Any) -> Any:
    """float32 for float16 inputs (the device accumulates in float32), else the dtype itself."""
    import tensorflow as tf

    return tf.float32 if dtype == tf.float16 else dtype


def widened(tensor: Any, rank: int, dtype: Any) -> Any:
    """``tensor`` cast to ``dtype``, its static rank set: the traced bodies see inputs of unknown
    shape, and ``tf.scan`` needs the per-step shapes' ranks to stay fixed across iterations.
    ``set_shape`` adds no op (an ``EnsureShape`` would reach the user's graph through the
    gradient, which rebuilds the body there); a wrong rank there fails when the graph is built.
    """
    import tensorflow as tf

    cast = tf.cast(tensor, dtype)
    cast.set_shape(tf.TensorShape([None] * rank).merge_with(cast.shape))
    return cast


def step_mask(seq_length: Any, steps: Any, dtype: Any) -> Any:
    """``[time, batch, 1]``: 1 where ``t < seq_length[b]``, else 0, in ``dtype``."""
    import tensorflow as tf

    t = tf.range(steps, dtype=tf.int32)[:, None]
    valid = t < tf.reshape(tf.cast(seq_length, tf.int32), [1, -1])
    return tf.cast(valid, dtype)[:, :, None]


def scan_steps(
    step: Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[Any, ...]],
    elems: tuple[Any, ...],
    first: tuple[Any, ...],
) -> tuple[Any, ...]:
    """``tf.scan`` over the time axis: each output stacked to ``[time, ...]``.

    ``step(previous outputs, elements at t)`` returns the outputs at ``t``; ``first`` gives the
    value of every output "before" step 0 (the initial state, zeros for the rest).
    """
    import tensorflow as tf

    stacked = tf.scan(step, elems, initializer=first)
    return tuple(stacked)
