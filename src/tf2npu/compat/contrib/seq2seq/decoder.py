"""TF 1.15's ``Decoder`` interface, ``dynamic_decode`` and ``BasicDecoder``.

``dynamic_decode`` runs ``decoder.step`` in a v1 ``tf.while_loop`` under the variable scope
``decoder`` (or ``scope``) until every batch entry is finished or ``maximum_iterations`` steps
ran. It records each entry's length (the step at which it finished, plus one), writes each
step's outputs to TensorArrays and returns ``(outputs, final_state, lengths)``; outputs are
batch-major unless ``output_time_major``. With ``impute_finished`` the outputs of finished
entries are zeros and their state is frozen (scalar states pass through).
"""

from __future__ import annotations

import abc
import collections
import contextlib
from typing import Any

import tensorflow.compat.v1 as tf
from tensorflow.python.ops import control_flow_util

from tf2npu.compat.contrib.rnn.base import (
    assert_like_rnncell,
    transpose_batch_time,
    zero_state_tensors,
)
from tf2npu.compat.contrib.seq2seq.helpers import Helper


class Decoder(abc.ABC):
    """What ``dynamic_decode`` drives: ``initialize`` once, then ``step`` until finished."""

    @property
    def batch_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_dtype(self) -> Any:
        raise NotImplementedError

    @abc.abstractmethod
    def initialize(self, name: str | None = None) -> tuple[Any, Any, Any]:
        """``(finished, initial_inputs, initial_state)``."""

    @abc.abstractmethod
    def step(self, time: Any, inputs: Any, state: Any, name: str | None = None) -> Any:
        """``(outputs, next_state, next_inputs, finished)`` for one step."""

    def finalize(self, outputs: Any, final_state: Any, sequence_lengths: Any) -> Any:
        """Post-process the stacked outputs (optional: the default is to keep them)."""
        raise NotImplementedError

    @property
    def tracks_own_finished(self) -> bool:
        """True when ``step`` returns the finished flags to use as they are (beam search)."""
        return False


def _is_xla_or_while(graph: Any) -> tuple[bool, bool]:
    ctxt = graph._get_control_flow_context()
    return (
        control_flow_util.GetContainingXLAContext(ctxt) is not None,
        control_flow_util.GetContainingWhileContext(ctxt) is not None,
    )


def _element_shape(batch_size: Any, size: Any) -> Any:
    if not isinstance(size, tf.TensorShape) or size.ndims == 0:
        return None
    static = tf.get_static_value(tf.convert_to_tensor(batch_size, name="batch_size"))
    return tf.TensorShape([static]).concatenate(size)


def _checked_maximum_iterations(maximum_iterations: Any) -> Any:
    if maximum_iterations is None:
        return None
    value = tf.convert_to_tensor(maximum_iterations, dtype=tf.int32, name="maximum_iterations")
    if value.get_shape().ndims != 0:
        raise ValueError("maximum_iterations must be a scalar")
    return value


def _copy_state_unless(finished: Any) -> Any:
    def copy(new: Any, cur: Any) -> Any:
        if isinstance(cur, tf.TensorArray):
            return new
        new.set_shape(cur.shape)
        return new if new.shape.ndims == 0 else tf.where(finished, cur, new)

    return copy


def dynamic_decode(
    decoder: Decoder,
    output_time_major: bool = False,
    impute_finished: bool = False,
    maximum_iterations: Any = None,
    parallel_iterations: int = 32,
    swap_memory: bool = False,
    scope: Any = None,
) -> tuple[Any, Any, Any]:
    """Decode with ``decoder`` until done; ``(final_outputs, final_state, lengths)``.

    Raises:
        TypeError: ``decoder`` is not a ``Decoder``.
        ValueError: ``maximum_iterations`` is not a scalar, or is missing under XLA.
    """
    if not isinstance(decoder, Decoder):
        raise TypeError(f"Expected decoder to be type Decoder, but saw: {type(decoder)}")
    with tf.variable_scope(scope, "decoder") as varscope:
        is_xla, in_while = _is_xla_or_while(tf.get_default_graph())
        if not in_while and varscope.caching_device is None:
            # As TF 1.15: variables read inside the loop are cached once, not re-read per step.
            varscope.set_caching_device(lambda op: op.device)
        maximum_iterations = _checked_maximum_iterations(maximum_iterations)
        finished, inputs, state = decoder.initialize()
        zero_outputs = tf.nest.map_structure(
            lambda s, d: zero_state_tensors(s, decoder.batch_size, d),
            decoder.output_size,
            decoder.output_dtype,
        )
        if is_xla and maximum_iterations is None:
            raise ValueError("maximum_iterations is required for XLA compilation.")
        if maximum_iterations is not None:
            finished = tf.logical_or(finished, maximum_iterations <= 0)
        lengths = tf.zeros_like(finished, dtype=tf.int32)
        dynamic_size = maximum_iterations is None or not is_xla
        outputs_ta = tf.nest.map_structure(
            lambda s, d: tf.TensorArray(
                dtype=d,
                size=0 if dynamic_size else maximum_iterations,
                dynamic_size=dynamic_size,
                element_shape=_element_shape(decoder.batch_size, s),
            ),
            decoder.output_size,
            decoder.output_dtype,
        )

        def condition(*loop_vars: Any) -> Any:
            return tf.logical_not(tf.reduce_all(loop_vars[4]))

        def body(
            time: Any, outputs_ta: Any, state: Any, inputs: Any, finished: Any, lengths: Any
        ) -> tuple[Any, ...]:
            outputs, next_state, next_inputs, step_finished = decoder.step(time, inputs, state)
            if not decoder.tracks_own_finished:
                step_finished = tf.logical_or(step_finished, finished)
            lengths = tf.where(
                tf.logical_not(finished), tf.fill(tf.shape(lengths), time + 1), lengths
            )
            tf.nest.assert_same_structure(state, next_state)
            tf.nest.assert_same_structure(outputs_ta, outputs)
            tf.nest.assert_same_structure(inputs, next_inputs)
            if impute_finished:
                outputs = tf.nest.map_structure(
                    lambda out, zero: tf.where(finished, zero, out), outputs, zero_outputs
                )
                next_state = tf.nest.map_structure(_copy_state_unless(finished), next_state, state)
            outputs_ta = tf.nest.map_structure(
                lambda ta, out: ta.write(time, out), outputs_ta, outputs
            )
            return time + 1, outputs_ta, next_state, next_inputs, step_finished, lengths

        res = tf.while_loop(
            condition,
            body,
            loop_vars=(
                tf.constant(0, dtype=tf.int32),
                outputs_ta,
                state,
                inputs,
                finished,
                lengths,
            ),
            parallel_iterations=parallel_iterations,
            maximum_iterations=maximum_iterations,
            swap_memory=swap_memory,
        )
        final_outputs = tf.nest.map_structure(lambda ta: ta.stack(), res[1])
        final_state, final_lengths = res[2], res[5]
        with contextlib.suppress(NotImplementedError):  # finalize is optional
            final_outputs, final_state = decoder.finalize(final_outputs, final_state, final_lengths)
        if not output_time_major:
            final_outputs = tf.nest.map_structure(transpose_batch_time, final_outputs)
    return final_outputs, final_state, final_lengths


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput", ("rnn_output", "sample_id"))):
    """One step of ``BasicDecoder``: the (projected) cell output and the sampled ids."""


def rnn_output_size(cell: Any, output_layer: Any) -> Any:
    """The cell's output size, after ``output_layer`` when there is one."""
    size = cell.output_size
    if output_layer is None:
        return size
    unknown_batch = tf.nest.map_structure(lambda s: tf.TensorShape([None]).concatenate(s), size)
    layer_shape = output_layer.compute_output_shape(unknown_batch)
    return tf.nest.map_structure(lambda s: s[1:], layer_shape)


class BasicDecoder(Decoder):
    """Sampling decoder: ``cell`` (then ``output_layer``) per step, ``helper`` picks inputs."""

    def __init__(self, cell: Any, helper: Any, initial_state: Any, output_layer: Any = None):
        assert_like_rnncell("cell", cell)
        if not isinstance(helper, Helper):
            raise TypeError(f"helper must be a Helper, received: {type(helper)}")
        if output_layer is not None and not isinstance(output_layer, tf.layers.Layer):
            raise TypeError(f"output_layer must be a Layer, received: {type(output_layer)}")
        self._cell = cell
        self._helper = helper
        self._initial_state = initial_state
        self._output_layer = output_layer

    @property
    def batch_size(self) -> Any:
        return self._helper.batch_size

    @property
    def output_size(self) -> BasicDecoderOutput:
        return BasicDecoderOutput(
            rnn_output=rnn_output_size(self._cell, self._output_layer),
            sample_id=self._helper.sample_ids_shape,
        )

    @property
    def output_dtype(self) -> BasicDecoderOutput:
        dtype = tf.nest.flatten(self._initial_state)[0].dtype
        size = rnn_output_size(self._cell, self._output_layer)
        return BasicDecoderOutput(
            tf.nest.map_structure(lambda _: dtype, size), self._helper.sample_ids_dtype
        )

    def initialize(self, name: str | None = None) -> tuple[Any, Any, Any]:
        """``(finished, first inputs, initial_state)``."""
        return (*self._helper.initialize(), self._initial_state)

    def step(self, time: Any, inputs: Any, state: Any, name: str | None = None) -> Any:
        """``(BasicDecoderOutput, next_state, next_inputs, finished)``."""
        with tf.name_scope(name, "BasicDecoderStep", (time, inputs, state)):
            outputs, cell_state = self._cell(inputs, state)
            if self._output_layer is not None:
                outputs = self._output_layer(outputs)
            sample_ids = self._helper.sample(time=time, outputs=outputs, state=cell_state)
            finished, next_inputs, next_state = self._helper.next_inputs(
                time=time, outputs=outputs, state=cell_state, sample_ids=sample_ids
            )
        return BasicDecoderOutput(outputs, sample_ids), next_state, next_inputs, finished
