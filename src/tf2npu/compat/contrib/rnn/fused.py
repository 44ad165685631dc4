"""TF 1.15's fused RNNs: ``FusedRNNCell``, ``FusedRNNCellAdaptor``, ``TimeReversedFusedRNN``.

A fused cell runs a whole time-major sequence: ``cell(inputs, initial_state=None,
dtype=None, sequence_length=None, scope=None) -> (outputs, final_state)``, with ``inputs`` a
``[time, batch, depth]`` tensor or a list of ``[batch, depth]`` tensors (outputs come back in
the same form). ``FusedRNNCellAdaptor`` gives an ordinary cell that interface through
``static_rnn`` (or ``dynamic_rnn``); ``TimeReversedFusedRNN`` runs a fused cell backwards in
time (each sequence reversed within its length), as the backward half of a bidirectional RNN.
"""

from __future__ import annotations

import abc
from typing import Any

import tensorflow.compat.v1 as tf


class FusedRNNCell(abc.ABC):
    """Interface of a cell that runs a whole sequence in one call."""

    @abc.abstractmethod
    def __call__(
        self,
        inputs: Any,
        initial_state: Any = None,
        dtype: Any = None,
        sequence_length: Any = None,
        scope: Any = None,
    ) -> tuple[Any, Any]:
        """``(outputs, final_state)`` for a time-major sequence."""


class FusedRNNCellAdaptor(FusedRNNCell):
    """An ``RNNCell`` behind the fused interface (``static_rnn``, or ``dynamic_rnn``)."""

    def __init__(self, cell: Any, use_dynamic_rnn: bool = False) -> None:
        self._cell = cell
        self._use_dynamic_rnn = use_dynamic_rnn

    def __call__(
        self,
        inputs: Any,
        initial_state: Any = None,
        dtype: Any = None,
        sequence_length: Any = None,
        scope: Any = None,
    ) -> tuple[Any, Any]:
        is_list = isinstance(inputs, list)
        if self._use_dynamic_rnn:
            stacked = tf.stack(inputs) if is_list else inputs
            outputs, state = tf.nn.dynamic_rnn(
                self._cell,
                stacked,
                sequence_length=sequence_length,
                initial_state=initial_state,
                dtype=dtype,
                time_major=True,
                scope=scope,
            )
            return (tf.unstack(outputs) if is_list else outputs), state
        steps = inputs if is_list else tf.unstack(inputs)
        outputs, state = tf.nn.static_rnn(
            self._cell,
            steps,
            initial_state=initial_state,
            dtype=dtype,
            sequence_length=sequence_length,
            scope=scope,
        )
        return (outputs if is_list else tf.stack(outputs)), state


class TimeReversedFusedRNN(FusedRNNCell):
    """Runs a fused cell on the time-reversed input and reverses its outputs back."""

    def __init__(self, cell: Any) -> None:
        self._cell = cell

    @staticmethod
    def _reverse(t: Any, lengths: Any) -> Any:
        if isinstance(t, list):
            return list(reversed(t))
        if lengths is None:
            return tf.reverse_v2(t, [0])
        return tf.reverse_sequence(t, lengths, 0, 1)

    def __call__(
        self,
        inputs: Any,
        initial_state: Any = None,
        dtype: Any = None,
        sequence_length: Any = None,
        scope: Any = None,
    ) -> tuple[Any, Any]:
        outputs, state = self._cell(
            self._reverse(inputs, sequence_length),
            initial_state=initial_state,
            dtype=dtype,
            sequence_length=sequence_length,
            scope=scope,
        )
        return self._reverse(outputs, sequence_length), state
