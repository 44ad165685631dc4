"""TF 1.15's contrib cell wrappers, with its variable names.

* ``InputProjectionWrapper`` / ``OutputProjectionWrapper``: a ``kernel``/``bias`` projection
  (contrib's ``_Linear``) before / after the cell, in the wrapper's scope;
* ``EmbeddingWrapper``: ids -> ``embedding`` ``[classes, size]`` (uniform in +-sqrt(3) unless
  an initializer is given) on the CPU, then the cell;
* ``HighwayWrapper``: ``out = inp * carry + cell(inp) * transform`` with ``carry =
  sigmoid(inp carry_w + carry_b)`` and ``transform = 1 - carry`` (or its own gate);
* ``AttentionCellWrapper``: attention over the last ``attn_length`` outputs (Cheng et al.
  2016), variables ``kernel``/``bias``, ``attention/{attn_w, attn_v, kernel, bias}`` and
  ``attn_output_projection/{kernel, bias}``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import tensorflow.compat.v1 as tf

from tf2npu.compat.contrib.rnn.base import Linear, RNNCell, assert_like_rnncell


class _ProjectionBase(RNNCell):  # type: ignore[misc]
    """A wrapper whose state is the wrapped cell's."""

    def __init__(self, cell: Any, reuse: Any = None) -> None:
        super().__init__(_reuse=reuse)
        assert_like_rnncell("cell", cell)
        self._cell = cell

    @property
    def state_size(self) -> Any:
        return self._cell.state_size

    @property
    def output_size(self) -> Any:
        return self._cell.output_size

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with tf.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return self._cell.zero_state(batch_size, dtype)


class InputProjectionWrapper(_ProjectionBase):
    """Projects the inputs to ``num_proj`` (then ``activation``) before the cell."""

    def __init__(
        self,
        cell: Any,
        num_proj: int,
        activation: Callable[[Any], Any] | None = None,
        input_size: Any = None,
        reuse: Any = None,
    ) -> None:
        super().__init__(cell, reuse)
        if input_size is not None:
            tf.logging.warn("%s: The input_size parameter is deprecated.", self)
        self._num_proj = num_proj
        self._activation = activation
        self._linear: Linear | None = None

    def call(self, inputs: Any, state: Any) -> Any:
        if self._linear is None:
            self._linear = Linear(inputs, self._num_proj, True)
        projected = self._linear(inputs)
        if self._activation:
            projected = self._activation(projected)
        return self._cell(projected, state)


class OutputProjectionWrapper(_ProjectionBase):
    """Projects the cell's output to ``output_size`` (then ``activation``)."""

    def __init__(
        self,
        cell: Any,
        output_size: int,
        activation: Callable[[Any], Any] | None = None,
        reuse: Any = None,
    ) -> None:
        super().__init__(cell, reuse)
        if output_size < 1:
            raise ValueError(f"Parameter output_size must be > 0: {output_size}.")
        self._output_size = output_size
        self._activation = activation
        self._linear: Linear | None = None

    @property
    def output_size(self) -> int:
        return self._output_size

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        output, new_state = self._cell(inputs, state)
        if self._linear is None:
            self._linear = Linear(output, self._output_size, True)
        projected = self._linear(output)
        if self._activation:
            projected = self._activation(projected)
        return projected, new_state


class EmbeddingWrapper(_ProjectionBase):
    """Looks the integer inputs up in an ``embedding`` variable before the cell."""

    def __init__(
        self,
        cell: Any,
        embedding_classes: int,
        embedding_size: int,
        initializer: Any = None,
        reuse: Any = None,
    ) -> None:
        super().__init__(cell, reuse)
        if embedding_classes <= 0 or embedding_size <= 0:
            raise ValueError(
                "Both embedding_classes and embedding_size must be > 0: "
                f"{embedding_classes}, {embedding_size}."
            )
        self._embedding_classes = embedding_classes
        self._embedding_size = embedding_size
        self._initializer = initializer

    def call(self, inputs: Any, state: Any) -> Any:
        with tf.device("/cpu:0"):
            initializer = self._initializer or tf.get_variable_scope().initializer
            if not initializer:
                bound = math.sqrt(3)
                initializer = tf.random_uniform_initializer(-bound, bound)
            dtype = state[0].dtype if isinstance(state, tuple) else state.dtype
            embedding = tf.get_variable(
                "embedding",
                [self._embedding_classes, self._embedding_size],
                initializer=initializer,
                dtype=dtype,
            )
            embedded = tf.nn.embedding_lookup(embedding, tf.reshape(inputs, [-1]))
            return self._cell(embedded, state)


class HighwayWrapper(_ProjectionBase):
    """A highway connection around the cell (inputs and outputs must have one shape)."""

    def __init__(
        self, cell: Any, couple_carry_transform_gates: bool = True, carry_bias_init: float = 1.0
    ) -> None:
        super().__init__(cell)
        self._couple_carry_transform_gates = couple_carry_transform_gates
        self._carry_bias_init = carry_bias_init

    def _highway(self, inp: Any, out: Any) -> Any:
        size = tf.compat.dimension_value(inp.get_shape().with_rank(2)[1])
        carry_w = tf.get_variable("carry_w", [size, size])
        carry_b = tf.get_variable(
            "carry_b", [size], initializer=tf.constant_initializer(self._carry_bias_init)
        )
        carry = tf.sigmoid(tf.nn.xw_plus_b(inp, carry_w, carry_b))
        if self._couple_carry_transform_gates:
            transform = 1 - carry
        else:
            transform_w = tf.get_variable("transform_w", [size, size])
            transform_b = tf.get_variable(
                "transform_b", [size], initializer=tf.constant_initializer(-self._carry_bias_init)
            )
            transform = tf.sigmoid(tf.nn.xw_plus_b(inp, transform_w, transform_b))
        return inp * carry + out * transform

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        # As TF 1.15: no scope of its own; the gates live in the caller's variable scope.
        outputs, new_state = self._cell(inputs, state, scope=scope)
        tf.nest.assert_same_structure(inputs, outputs)
        for inp, out in zip(tf.nest.flatten(inputs), tf.nest.flatten(outputs), strict=True):
            inp.get_shape().assert_is_compatible_with(out.get_shape())
        return tf.nest.map_structure(self._highway, inputs, outputs), new_state


class AttentionCellWrapper(RNNCell):  # type: ignore[misc]
    """Attention over the cell's last ``attn_length`` outputs (TF 1.15 contrib)."""

    def __init__(
        self,
        cell: Any,
        attn_length: int,
        attn_size: int | None = None,
        attn_vec_size: int | None = None,
        input_size: int | None = None,
        state_is_tuple: bool = True,
        reuse: Any = None,
    ) -> None:
        super().__init__(_reuse=reuse)
        assert_like_rnncell("cell", cell)
        if tf.nest.is_nested(cell.state_size) and not state_is_tuple:
            raise ValueError(
                "Cell returns tuple of states, but the flag state_is_tuple is not set. "
                f"State size is: {cell.state_size}"
            )
        if attn_length <= 0:
            raise ValueError(f"attn_length should be greater than zero, got {attn_length}")
        if not state_is_tuple:
            tf.logging.warn(
                "%s: Using a concatenated state is slower and will soon be deprecated.  "
                "Use state_is_tuple=True.",
                self,
            )
        self._attn_size = cell.output_size if attn_size is None else attn_size
        self._attn_vec_size = self._attn_size if attn_vec_size is None else attn_vec_size
        self._state_is_tuple = state_is_tuple
        self._cell = cell
        self._input_size = input_size
        self._attn_length = attn_length
        self._linears: dict[str, Linear] = {}

    @property
    def state_size(self) -> Any:
        size = (self._cell.state_size, self._attn_size, self._attn_size * self._attn_length)
        return size if self._state_is_tuple else sum(size)

    @property
    def output_size(self) -> int:
        return self._attn_size

    def _linear(self, key: str, args: Any, size: int) -> Any:
        if key not in self._linears:
            self._linears[key] = Linear(args, size, True)
        return self._linears[key](args)

    def _split_state(self, state: Any) -> tuple[Any, Any, Any]:
        if self._state_is_tuple:
            return state  # type: ignore[no-any-return]
        cell_size, attn = self._cell.state_size, self._attn_size
        return (
            tf.slice(state, [0, 0], [-1, cell_size]),
            tf.slice(state, [0, cell_size], [-1, attn]),
            tf.slice(state, [0, cell_size + attn], [-1, attn * self._attn_length]),
        )

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        state, attns, attn_states = self._split_state(state)
        attn_states = tf.reshape(attn_states, [-1, self._attn_length, self._attn_size])
        input_size = self._input_size or inputs.get_shape().as_list()[1]
        inputs = self._linear("input", [inputs, attns], input_size)
        cell_output, new_state = self._cell(inputs, state)
        flat_state = tf.concat(tf.nest.flatten(new_state), 1) if self._state_is_tuple else new_state
        new_attns, new_attn_states = self._attention(flat_state, attn_states)
        with tf.variable_scope("attn_output_projection"):
            output = self._linear("output", [cell_output, new_attns], self._attn_size)
        new_attn_states = tf.concat([new_attn_states, tf.expand_dims(output, 1)], 1)
        new_attn_states = tf.reshape(new_attn_states, [-1, self._attn_length * self._attn_size])
        next_state = (new_state, new_attns, new_attn_states)
        if not self._state_is_tuple:
            next_state = tf.concat(list(next_state), 1)
        return output, next_state

    def _attention(self, query: Any, attn_states: Any) -> tuple[Any, Any]:
        with tf.variable_scope("attention"):
            k = tf.get_variable("attn_w", [1, 1, self._attn_size, self._attn_vec_size])
            v = tf.get_variable("attn_v", [self._attn_vec_size])
            hidden = tf.reshape(attn_states, [-1, self._attn_length, 1, self._attn_size])
            features = tf.nn.conv2d(hidden, k, [1, 1, 1, 1], "SAME")
            y = tf.reshape(
                self._linear("query", query, self._attn_vec_size), [-1, 1, 1, self._attn_vec_size]
            )
            weights = tf.nn.softmax(tf.reduce_sum(v * tf.tanh(features + y), [2, 3]))
            context = tf.reduce_sum(
                tf.reshape(weights, [-1, self._attn_length, 1, 1]) * hidden, [1, 2]
            )
            new_attns = tf.reshape(context, [-1, self._attn_size])
            return new_attns, tf.slice(attn_states, [0, 1, 0], [-1, -1, -1])
