"""TF 1.15's ``stack_bidirectional_rnn`` and ``stack_bidirectional_dynamic_rnn``.

Layer ``i`` is a bidirectional RNN under ``<scope or stack_bidirectional_rnn>/cell_<i>``
whose input is the previous layer's concatenated forward and backward outputs (the static
form concatenates per step, as ``static_bidirectional_rnn`` does). Returns ``(outputs,
forward states, backward states)``, one state per layer.
"""

from __future__ import annotations

from typing import Any

import tensorflow.compat.v1 as tf


def _check(cells_fw: Any, cells_bw: Any, states_fw: Any, states_bw: Any) -> None:
    if not cells_fw:
        raise ValueError("Must specify at least one fw cell for BidirectionalRNN.")
    if not cells_bw:
        raise ValueError("Must specify at least one bw cell for BidirectionalRNN.")
    if not isinstance(cells_fw, list):
        raise ValueError("cells_fw must be a list of RNNCells (one per layer).")
    if not isinstance(cells_bw, list):
        raise ValueError("cells_bw must be a list of RNNCells (one per layer).")
    if len(cells_fw) != len(cells_bw):
        raise ValueError("Forward and Backward cells must have the same depth.")
    for label, states, cells in (("fw", states_fw, cells_fw), ("bw", states_bw, cells_bw)):
        if states is not None and (not isinstance(states, list) or len(states) != len(cells)):
            raise ValueError(
                f"initial_states_{label} must be a list of state tensors (one per layer)."
            )


def _initial(states: Any, i: int) -> Any:
    return states[i] if states else None


def stack_bidirectional_rnn(
    cells_fw: Any,
    cells_bw: Any,
    inputs: Any,
    initial_states_fw: Any = None,
    initial_states_bw: Any = None,
    dtype: Any = None,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    """Stacked ``static_bidirectional_rnn`` over a list of ``[batch, depth]`` inputs."""
    _check(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    layer = inputs
    with tf.variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw, strict=True)):
            with tf.variable_scope(f"cell_{i}") as cell_scope:
                layer, state_fw, state_bw = tf.nn.static_bidirectional_rnn(
                    cell_fw,
                    cell_bw,
                    layer,
                    initial_state_fw=_initial(initial_states_fw, i),
                    initial_state_bw=_initial(initial_states_bw, i),
                    sequence_length=sequence_length,
                    dtype=dtype,
                    scope=cell_scope,
                )
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer, tuple(states_fw), tuple(states_bw)


def stack_bidirectional_dynamic_rnn(
    cells_fw: Any,
    cells_bw: Any,
    inputs: Any,
    initial_states_fw: Any = None,
    initial_states_bw: Any = None,
    dtype: Any = None,
    sequence_length: Any = None,
    parallel_iterations: int | None = None,
    time_major: bool = False,
    scope: Any = None,
    swap_memory: bool = False,
) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    """Stacked ``bidirectional_dynamic_rnn``; outputs ``[..., 2 * depth]`` of the top layer."""
    _check(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    layer = inputs
    with tf.variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw, strict=True)):
            with tf.variable_scope(f"cell_{i}"):
                outputs, (state_fw, state_bw) = tf.nn.bidirectional_dynamic_rnn(
                    cell_fw,
                    cell_bw,
                    layer,
                    initial_state_fw=_initial(initial_states_fw, i),
                    initial_state_bw=_initial(initial_states_bw, i),
                    sequence_length=sequence_length,
                    parallel_iterations=parallel_iterations,
                    dtype=dtype,
                    swap_memory=swap_memory,
                    time_major=time_major,
                )
                layer = tf.concat(outputs, 2)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer, tuple(states_fw), tuple(states_bw)
