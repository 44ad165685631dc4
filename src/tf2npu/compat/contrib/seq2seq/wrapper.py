"""TF 1.15's ``tf.contrib.seq2seq.AttentionWrapper`` and ``AttentionWrapperState``.

One step of the wrapped cell: the input is ``cell_input_fn(inputs, previous attention)``
(concatenation by default); the cell runs; its output queries each attention mechanism; the
context is ``alignments @ values``; the attention is ``attention_layer([cell_output,
context])`` when ``attention_layer_size`` (or ``attention_layer``) is given, else the context.
The step returns the attention (``output_attention=True``, Luong style) or the cell output.

The wrapper is an ``RNNCell`` named ``attention_wrapper`` (or ``name``), so its variables are
``<scope>/attention_wrapper/<cell>/...``, ``.../attention_layer/kernel`` and the mechanisms'
``.../bahdanau_attention/...``, as in TF 1.15.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from typing import Any

import tensorflow.compat.v1 as tf

from tf2npu.compat.contrib.rnn.base import RNNCell, assert_like_rnncell, zero_state_tensors
from tf2npu.compat.contrib.seq2seq.attention import AttentionMechanism

_BEAM_HINT = (
    "Are you using the BeamSearchDecoder?  You may need to tile your {what} via the "
    "tf.contrib.seq2seq.tile_batch function with argument multiple=beam_width."
)


def _with_same_shape(old: Any, new: Any) -> Any:
    """``new`` with ``old``'s static shape; incompatible shapes raise ``ValueError``."""
    if not (isinstance(old, tf.Tensor) and isinstance(new, tf.Tensor)):
        return new
    if not old.shape.is_compatible_with(new.shape):
        raise ValueError(
            "The shape of the AttentionWrapperState is expected to be same as the one to "
            f"clone. self.shape: {old.shape}, input.shape: {new.shape}"
        )
    new.set_shape(old.shape)
    return new


class AttentionWrapperState(
    collections.namedtuple(
        "AttentionWrapperState",
        ("cell_state", "attention", "time", "alignments", "alignment_history", "attention_state"),
    )
):
    """The state of an ``AttentionWrapper``: the cell's state, the last attention, the step
    (``time``), the alignments, their history (``TensorArray``s, if enabled) and each
    mechanism's state."""

    def clone(self, **kwargs: Any) -> AttentionWrapperState:
        """This state with the fields in ``kwargs`` replaced, their static shapes checked."""
        replaced = super()._replace(**kwargs)
        return tf.nest.map_structure(_with_same_shape, self, replaced)  # type: ignore[no-any-return]


def _compute_attention(
    mechanism: Any, cell_output: Any, attention_state: Any, attention_layer: Any
) -> tuple[Any, Any, Any]:
    """Attention, alignments and next attention state for one mechanism."""
    alignments, next_state = mechanism(cell_output, state=attention_state)
    context = tf.squeeze(tf.matmul(tf.expand_dims(alignments, 1), mechanism.values), [1])
    if attention_layer is None:
        return context, alignments, next_state
    return attention_layer(tf.concat([cell_output, context], 1)), alignments, next_state


def _mechanisms_of(attention_mechanism: Any) -> tuple[bool, tuple[Any, ...]]:
    if isinstance(attention_mechanism, (list, tuple)):
        for mech in attention_mechanism:
            if not isinstance(mech, AttentionMechanism):
                raise TypeError(
                    "attention_mechanism must contain only instances of AttentionMechanism, "
                    f"saw type: {type(mech).__name__}"
                )
        return True, tuple(attention_mechanism)
    if not isinstance(attention_mechanism, AttentionMechanism):
        raise TypeError(
            "attention_mechanism must be an AttentionMechanism or list of multiple "
            f"AttentionMechanism instances, saw type: {type(attention_mechanism).__name__}"
        )
    return False, (attention_mechanism,)


def _concat_inputs(inputs: Any, attention: Any) -> Any:
    return tf.concat([inputs, attention], -1)


class AttentionWrapper(RNNCell):  # type: ignore[misc]
    """Wraps an ``RNNCell`` with attention over one or several mechanisms (TF 1.15 API)."""

    def __init__(
        self,
        cell: Any,
        attention_mechanism: Any,
        attention_layer_size: Any = None,
        alignment_history: bool = False,
        cell_input_fn: Callable[[Any, Any], Any] | None = None,
        output_attention: bool = True,
        initial_cell_state: Any = None,
        name: str | None = None,
        attention_layer: Any = None,
        attention_fn: Callable[..., tuple[Any, Any, Any]] | None = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(name=name, dtype=dtype)
        assert_like_rnncell("cell", cell)
        self._is_multi, mechanisms = _mechanisms_of(attention_mechanism)
        if cell_input_fn is not None and not callable(cell_input_fn):
            raise TypeError(
                f"cell_input_fn must be callable, saw type: {type(cell_input_fn).__name__}"
            )
        self._attention_layers, self._attention_layer_size = self._attention_layers_for(
            cell, mechanisms, attention_layer_size, attention_layer
        )
        self._attention_fn = attention_fn or _compute_attention
        self._cell = cell
        self._attention_mechanisms = mechanisms
        self._cell_input_fn = cell_input_fn or _concat_inputs
        self._output_attention = output_attention
        self._alignment_history = alignment_history
        self._initial_cell_state = None
        if initial_cell_state is not None:
            with tf.name_scope(name, "AttentionWrapperInit"):
                self._initial_cell_state = self._checked_initial_state(initial_cell_state)

    @staticmethod
    def _attention_layers_for(
        cell: Any, mechanisms: tuple[Any, ...], layer_size: Any, layer: Any
    ) -> tuple[tuple[Any, ...] | None, Any]:
        """The attention layers (or None) and the summed attention depth."""
        if layer_size is not None and layer is not None:
            raise ValueError("Only one of attention_layer_size and attention_layer should be set")
        if layer_size is not None:
            sizes = tuple(layer_size if isinstance(layer_size, (list, tuple)) else (layer_size,))
            if len(sizes) != len(mechanisms):
                raise ValueError(
                    "If provided, attention_layer_size must contain exactly one integer per "
                    f"attention_mechanism, saw: {len(sizes)} vs {len(mechanisms)}"
                )
            layers = tuple(
                tf.layers.Dense(size, name="attention_layer", use_bias=False, dtype=mech.dtype)
                for size, mech in zip(sizes, mechanisms, strict=True)
            )
            return layers, sum(sizes)
        if layer is not None:
            layers = tuple(layer if isinstance(layer, (list, tuple)) else (layer,))
            if len(layers) != len(mechanisms):
                raise ValueError(
                    "If provided, attention_layer must contain exactly one layer per "
                    f"attention_mechanism, saw: {len(layers)} vs {len(mechanisms)}"
                )
            total = 0
            for lay, mech in zip(layers, mechanisms, strict=True):
                width = cell.output_size + tf.compat.dimension_value(mech.values.shape[-1])
                out = lay.compute_output_shape(tf.TensorShape([None, width]))
                total += tf.compat.dimension_value(out[-1])
            return layers, total
        return None, sum(tf.compat.dimension_value(m.values.shape[-1]) for m in mechanisms)

    def _checked_initial_state(self, initial_cell_state: Any) -> Any:
        last = tf.nest.flatten(initial_cell_state)[-1]
        batch = tf.compat.dimension_value(last.shape[0]) or tf.shape(last)[0]
        message = (
            f"When constructing AttentionWrapper {self.name}: Non-matching batch sizes between "
            "the memory (encoder output) and initial_cell_state.  "
            + _BEAM_HINT.format(what="initial state")
        )
        with tf.control_dependencies(self._batch_size_checks(batch, message)):
            return tf.nest.map_structure(
                lambda s: tf.identity(s, name="check_initial_cell_state"), initial_cell_state
            )

    def _batch_size_checks(self, batch_size: Any, message: str) -> list[Any]:
        return [
            tf.assert_equal(batch_size, mech.batch_size, message=message)
            for mech in self._attention_mechanisms
        ]

    def _item_or_tuple(self, seq: Iterable[Any]) -> Any:
        items = tuple(seq)
        return items if self._is_multi else items[0]

    @property
    def output_size(self) -> Any:
        return self._attention_layer_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self) -> AttentionWrapperState:
        mechs = self._attention_mechanisms
        return AttentionWrapperState(
            cell_state=self._cell.state_size,
            time=tf.TensorShape([]),
            attention=self._attention_layer_size,
            alignments=self._item_or_tuple(m.alignments_size for m in mechs),
            attention_state=self._item_or_tuple(m.state_size for m in mechs),
            alignment_history=self._item_or_tuple(
                m.alignments_size if self._alignment_history else () for m in mechs
            ),
        )

    def zero_state(self, batch_size: Any, dtype: Any) -> AttentionWrapperState:
        """The initial state: ``initial_cell_state`` (or the cell's zero state) and zeros.

        ``batch_size`` must be the memory's batch size (``batch * beam_width`` under beam
        search); a mismatch fails when the state is evaluated.
        """
        with tf.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            if self._initial_cell_state is not None:
                cell_state = self._initial_cell_state
            else:
                cell_state = self._cell.get_initial_state(batch_size=batch_size, dtype=dtype)
            message = (
                f"When calling zero_state of AttentionWrapper {self.name}: Non-matching batch "
                "sizes between the memory (encoder output) and the requested batch size.  Are "
                "you using the BeamSearchDecoder?  If so, make sure your encoder output has been "
                "tiled to beam_width via tf.contrib.seq2seq.tile_batch, and the batch_size= "
                "argument passed to zero_state is batch_size * beam_width."
            )
            with tf.control_dependencies(self._batch_size_checks(batch_size, message)):
                cell_state = tf.nest.map_structure(
                    lambda s: tf.identity(s, name="checked_cell_state"), cell_state
                )
            alignments = [
                m.initial_alignments(batch_size, dtype) for m in self._attention_mechanisms
            ]
            history = (
                tf.TensorArray(dtype, size=0, dynamic_size=True, element_shape=a.shape)
                if self._alignment_history
                else ()
                for a in alignments
            )
            return AttentionWrapperState(
                cell_state=cell_state,
                time=tf.zeros([], dtype=tf.int32),
                attention=zero_state_tensors(self._attention_layer_size, batch_size, dtype),
                alignments=self._item_or_tuple(alignments),
                attention_state=self._item_or_tuple(
                    m.initial_state(batch_size, dtype) for m in self._attention_mechanisms
                ),
                alignment_history=self._item_or_tuple(history),
            )

    def call(self, inputs: Any, state: Any) -> tuple[Any, AttentionWrapperState]:
        """One step: cell, then each mechanism; returns (attention or cell output, state)."""
        if not isinstance(state, AttentionWrapperState):
            raise TypeError(
                "Expected state to be instance of AttentionWrapperState. "
                f"Received type {type(state)} instead."
            )
        cell_output, next_cell_state = self._cell(
            self._cell_input_fn(inputs, state.attention), state.cell_state
        )
        batch = tf.compat.dimension_value(cell_output.shape[0]) or tf.shape(cell_output)[0]
        message = (
            f"When applying AttentionWrapper {self.name}: Non-matching batch sizes between the "
            "memory (encoder output) and the query (decoder output).  "
            + _BEAM_HINT.format(what="memory input")
        )
        with tf.control_dependencies(self._batch_size_checks(batch, message)):
            cell_output = tf.identity(cell_output, name="checked_cell_output")
        prev_states = state.attention_state if self._is_multi else [state.attention_state]
        prev_history = state.alignment_history if self._is_multi else [state.alignment_history]
        attentions, alignments, states, histories = [], [], [], []
        for i, mech in enumerate(self._attention_mechanisms):
            layer = self._attention_layers[i] if self._attention_layers else None
            attention, align, next_state = self._attention_fn(
                mech, cell_output, prev_states[i], layer
            )
            histories.append(
                prev_history[i].write(state.time, align) if self._alignment_history else ()
            )
            attentions.append(attention)
            alignments.append(align)
            states.append(next_state)
        attention = tf.concat(attentions, 1)
        next_state = AttentionWrapperState(
            time=state.time + 1,
            cell_state=next_cell_state,
            attention=attention,
            attention_state=self._item_or_tuple(states),
            alignments=self._item_or_tuple(alignments),
            alignment_history=self._item_or_tuple(histories),
        )
        return (attention if self._output_attention else cell_output), next_state
