"""TF 1.15's contrib LSTM/GRU variants that real code uses, with TF 1.15's variable names.

* ``LayerNormBasicLSTMCell`` (Ba et al. 2016): ``kernel`` ``[input + units, 4 units]``
  (gates ``i, j, f, o``), each gate and the new cell state layer-normalised under
  ``input``/``transform``/``forget``/``output``/``state`` (``gamma``, ``beta``); ``bias``
  only without layer norm; recurrent dropout on ``j`` with ``dropout_keep_prob``;
* ``CoupledInputForgetGateLSTMCell``: input gate = 1 - forget gate; ``W_0`` (``W_0``,
  ``W_1``... with ``num_unit_shards``), ``B``, peepholes ``W_F_diag``/``W_O_diag``,
  projection ``W_P_0``;
* ``NASCell`` (Zoph & Le 2017): ``kernel``, ``recurrent_kernel`` (8 blocks), optional
  ``bias`` and ``projection_weights``;
* ``UGRNNCell`` (Collins et al. 2017): one gate, ``kernel``/``bias`` ``[., 2 units]``;
* ``IndyLSTMCell`` (Gonnet & Deselaers 2017): diagonal recurrence, ``kernel_w``,
  ``kernel_u`` ``[1, 4 units]`` (uniform in [-1, 1]) and ``bias``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow.compat.v1 as tf

from tf2npu.compat.contrib.layers import layer_norm
from tf2npu.compat.contrib.rnn.base import (
    BIAS_NAME,
    WEIGHTS_NAME,
    LayerRNNCell,
    Linear,
    LSTMStateTuple,
    RNNCell,
)


def _norm(gain: float, shift: float, inp: Any, scope: str, dtype: Any = tf.float32) -> Any:
    """contrib's layer norm of ``inp`` with ``<scope>/gamma`` = gain, ``<scope>/beta`` = shift."""
    shape = inp.get_shape()[-1:]
    with tf.variable_scope(scope):
        tf.get_variable(
            "gamma", shape=shape, initializer=tf.constant_initializer(gain), dtype=dtype
        )
        tf.get_variable(
            "beta", shape=shape, initializer=tf.constant_initializer(shift), dtype=dtype
        )
    return layer_norm(inp, reuse=True, scope=scope)


class LayerNormBasicLSTMCell(RNNCell):  # type: ignore[misc]
    """LSTM with layer normalisation and recurrent dropout (TF 1.15 contrib)."""

    def __init__(
        self,
        num_units: int,
        forget_bias: float = 1.0,
        input_size: Any = None,
        activation: Callable[[Any], Any] = tf.tanh,
        layer_norm: bool = True,
        norm_gain: float = 1.0,
        norm_shift: float = 0.0,
        dropout_keep_prob: Any = 1.0,
        dropout_prob_seed: int | None = None,
        reuse: Any = None,
    ) -> None:
        super().__init__(_reuse=reuse)
        if input_size is not None:
            tf.logging.warn("%s: The input_size parameter is deprecated.", self)
        self._num_units = num_units
        self._activation = activation
        self._forget_bias = forget_bias
        self._keep_prob = dropout_keep_prob
        self._seed = dropout_prob_seed
        self._layer_norm = layer_norm
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_units

    def _maybe_norm(self, x: Any, scope: str) -> Any:
        if not self._layer_norm:
            return x
        return _norm(self._norm_gain, self._norm_shift, x, scope, dtype=x.dtype)

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        c, h = state
        args = tf.concat([inputs, h], 1)
        out_size = 4 * self._num_units
        weights = tf.get_variable("kernel", [args.get_shape()[-1], out_size], dtype=args.dtype)
        concat = tf.matmul(args, weights)
        if not self._layer_norm:
            concat = tf.nn.bias_add(concat, tf.get_variable("bias", [out_size], dtype=args.dtype))
        i, j, f, o = tf.split(value=concat, num_or_size_splits=4, axis=1)
        i = self._maybe_norm(i, "input")
        j = self._maybe_norm(j, "transform")
        f = self._maybe_norm(f, "forget")
        o = self._maybe_norm(o, "output")
        g = self._activation(j)
        if not isinstance(self._keep_prob, float) or self._keep_prob < 1:
            g = tf.nn.dropout(g, keep_prob=self._keep_prob, seed=self._seed)
        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * g
        new_c = self._maybe_norm(new_c, "state")
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


def _sharded_variable(name: str, shape: list[int], dtype: Any, num_shards: int) -> list[Any]:
    if num_shards > shape[0]:
        raise ValueError(f"Too many shards: shape={shape}, num_shards={num_shards}")
    unit = shape[0] // num_shards
    remaining = shape[0] - unit * num_shards
    return [
        tf.get_variable(
            f"{name}_{i}", [unit + (1 if i < remaining else 0), *shape[1:]], dtype=dtype
        )
        for i in range(num_shards)
    ]


def _concat_variable(name: str, shape: list[int], dtype: Any, num_shards: int) -> Any:
    """One variable ``name``, or ``name_0..`` shards concatenated once (TF 1.15's collection)."""
    shards = _sharded_variable(name, shape, dtype, num_shards)
    if len(shards) == 1:
        return shards[0]
    concat_name = name + "/concat"
    full_name = tf.get_variable_scope().name + "/" + concat_name + ":0"
    for value in tf.get_collection(tf.GraphKeys.CONCATENATED_VARIABLES):
        if value.name == full_name:
            return value
    joined = tf.concat(shards, 0, name=concat_name)
    tf.add_to_collection(tf.GraphKeys.CONCATENATED_VARIABLES, joined)
    return joined


class CoupledInputForgetGateLSTMCell(RNNCell):  # type: ignore[misc]
    """LSTM whose input gate is ``1 - forget gate`` (Greff et al. 2015), TF 1.15 contrib."""

    def __init__(
        self,
        num_units: int,
        use_peepholes: bool = False,
        initializer: Any = None,
        num_proj: int | None = None,
        proj_clip: float | None = None,
        num_unit_shards: int = 1,
        num_proj_shards: int = 1,
        forget_bias: float = 1.0,
        state_is_tuple: bool = True,
        activation: Callable[[Any], Any] = tf.tanh,
        reuse: Any = None,
        layer_norm: bool = False,
        norm_gain: float = 1.0,
        norm_shift: float = 0.0,
    ) -> None:
        super().__init__(_reuse=reuse)
        if not state_is_tuple:
            tf.logging.warn(
                "%s: Using a concatenated state is slower and will soon be deprecated.  "
                "Use state_is_tuple=True.",
                self,
            )
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._num_unit_shards = num_unit_shards
        self._num_proj_shards = num_proj_shards
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation
        self._layer_norm = layer_norm
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift
        out = num_proj or num_units
        self._state_size: Any = (
            LSTMStateTuple(num_units, out) if state_is_tuple else num_units + out
        )
        self._output_size = out

    @property
    def state_size(self) -> Any:
        return self._state_size

    @property
    def output_size(self) -> int:
        return self._output_size

    def _maybe_norm(self, x: Any, scope: str) -> Any:
        return _norm(self._norm_gain, self._norm_shift, x, scope) if self._layer_norm else x

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        num_proj = self._num_units if self._num_proj is None else self._num_proj
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = tf.slice(state, [0, 0], [-1, self._num_units])
            m_prev = tf.slice(state, [0, self._num_units], [-1, num_proj])
        dtype = inputs.dtype
        input_size = tf.compat.dimension_value(inputs.get_shape().with_rank(2)[1])
        if input_size is None:
            raise ValueError("Could not infer input size from inputs.get_shape()[-1]")
        w = _concat_variable(
            "W", [input_size + num_proj, 3 * self._num_units], dtype, self._num_unit_shards
        )
        b = tf.get_variable(
            "B", shape=[3 * self._num_units], initializer=tf.zeros_initializer(), dtype=dtype
        )
        lstm_matrix = tf.matmul(tf.concat([inputs, m_prev], 1), w)
        if not self._layer_norm:
            lstm_matrix = tf.nn.bias_add(lstm_matrix, b)
        j, f, o = tf.split(value=lstm_matrix, num_or_size_splits=3, axis=1)
        j, f, o = (
            self._maybe_norm(x, s) for x, s in ((j, "transform"), (f, "forget"), (o, "output"))
        )
        if self._use_peepholes:
            w_f = tf.get_variable("W_F_diag", shape=[self._num_units], dtype=dtype)
            w_o = tf.get_variable("W_O_diag", shape=[self._num_units], dtype=dtype)
            f_act = tf.sigmoid(f + self._forget_bias + w_f * c_prev)
        else:
            f_act = tf.sigmoid(f + self._forget_bias)
        c = self._maybe_norm(f_act * c_prev + (1 - f_act) * self._activation(j), "state")
        gate = o + w_o * c if self._use_peepholes else o
        m = tf.sigmoid(gate) * self._activation(c)
        if self._num_proj is not None:
            w_p = _concat_variable(
                "W_P", [self._num_units, self._num_proj], dtype, self._num_proj_shards
            )
            m = tf.matmul(m, w_p)
            if self._proj_clip is not None:
                m = tf.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else tf.concat([c, m], 1)
        return m, new_state


class NASCell(LayerRNNCell):  # type: ignore[misc]
    """The recurrent cell found by neural architecture search (TF 1.15 contrib)."""

    _NAS_BASE = 8

    def __init__(
        self,
        num_units: int,
        num_proj: int | None = None,
        use_bias: bool = False,
        reuse: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(_reuse=reuse, **kwargs)
        self._num_units = num_units
        self._num_proj = num_proj
        self._use_bias = use_bias
        self._state_size = LSTMStateTuple(num_units, num_proj or num_units)
        self._output_size = num_proj or num_units

    @property
    def state_size(self) -> Any:
        return self._state_size

    @property
    def output_size(self) -> int:
        return self._output_size

    def build(self, inputs_shape: Any) -> None:
        input_size = tf.compat.dimension_value(tf.TensorShape(inputs_shape).with_rank(2)[1])
        if input_size is None:
            raise ValueError("Could not infer input size from inputs.get_shape()[-1]")
        num_proj = self._num_units if self._num_proj is None else self._num_proj
        width = self._NAS_BASE * self._num_units
        self.recurrent_kernel = self.add_weight("recurrent_kernel", [num_proj, width])
        self.kernel = self.add_weight("kernel", [input_size, width])
        if self._use_bias:
            self.bias = self.add_weight("bias", shape=[width], initializer=tf.zeros_initializer)
        if self._num_proj is not None:
            self.projection_weights = self.add_weight(
                "projection_weights", [self._num_units, self._num_proj]
            )
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        sigmoid, tanh, relu = tf.sigmoid, tf.tanh, tf.nn.relu
        c_prev, m_prev = state
        m_matrix = tf.matmul(m_prev, self.recurrent_kernel)
        if self._use_bias:
            m_matrix = tf.nn.bias_add(m_matrix, self.bias)
        m = tf.split(axis=1, num_or_size_splits=self._NAS_BASE, value=m_matrix)
        x = tf.split(
            axis=1, num_or_size_splits=self._NAS_BASE, value=tf.matmul(inputs, self.kernel)
        )
        layer1 = (
            sigmoid(x[0] + m[0]),
            relu(x[1] + m[1]),
            sigmoid(x[2] + m[2]),
            relu(x[3] * m[3]),
            tanh(x[4] + m[4]),
            sigmoid(x[5] + m[5]),
            tanh(x[6] + m[6]),
            sigmoid(x[7] + m[7]),
        )
        l2_0 = tanh(tanh(layer1[0] * layer1[1]) + c_prev)
        l2_1 = tanh(layer1[2] + layer1[3])
        l2_2 = tanh(layer1[4] * layer1[5])
        l2_3 = sigmoid(layer1[6] + layer1[7])
        new_c = l2_0 * l2_1
        new_m = tanh(new_c * tanh(l2_2 + l2_3))
        if self._num_proj is not None:
            new_m = tf.matmul(new_m, self.projection_weights)
        return new_m, LSTMStateTuple(new_c, new_m)


class UGRNNCell(RNNCell):  # type: ignore[misc]
    """Update-gate RNN: ``h' = g * h + (1 - g) * tanh(c)`` from one ``[x, h]`` projection."""

    def __init__(
        self,
        num_units: int,
        initializer: Any = None,
        forget_bias: float = 1.0,
        activation: Callable[[Any], Any] = tf.tanh,
        reuse: Any = None,
    ) -> None:
        super().__init__(_reuse=reuse)
        self._num_units = num_units
        self._initializer = initializer
        self._forget_bias = forget_bias
        self._activation = activation
        self._linear: Linear | None = None

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        if tf.compat.dimension_value(inputs.get_shape().with_rank(2)[1]) is None:
            raise ValueError("Could not infer input size from inputs.get_shape()[-1]")
        with tf.variable_scope(tf.get_variable_scope(), initializer=self._initializer):
            cell_inputs = tf.concat([inputs, state], 1)
            if self._linear is None:
                self._linear = Linear(cell_inputs, 2 * self._num_units, True)
            g_act, c_act = tf.split(axis=1, num_or_size_splits=2, value=self._linear(cell_inputs))
            g = tf.sigmoid(g_act + self._forget_bias)
            new_state = g * state + (1.0 - g) * self._activation(c_act)
        return new_state, new_state


class IndyLSTMCell(LayerRNNCell):  # type: ignore[misc]
    """LSTM whose recurrent weights are diagonal (per unit), TF 1.15 contrib."""

    def __init__(
        self,
        num_units: int,
        forget_bias: float = 1.0,
        activation: Callable[[Any], Any] | None = None,
        reuse: Any = None,
        kernel_initializer: Any = None,
        bias_initializer: Any = None,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(_reuse=reuse, name=name, dtype=dtype)
        self.input_spec = tf.keras.layers.InputSpec(ndim=2)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._activation = activation or tf.tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: Any) -> None:
        depth = tf.compat.dimension_value(tf.TensorShape(inputs_shape)[1])
        if depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
        width = 4 * self._num_units
        self._kernel_w = self.add_weight(
            f"{WEIGHTS_NAME}_w", shape=[depth, width], initializer=self._kernel_initializer
        )
        self._kernel_u = self.add_weight(
            f"{WEIGHTS_NAME}_u",
            shape=[1, width],
            initializer=tf.random_uniform_initializer(minval=-1, maxval=1, dtype=self.dtype),
        )
        self._bias = self.add_weight(
            BIAS_NAME,
            shape=[width],
            initializer=self._bias_initializer or tf.zeros_initializer(dtype=self.dtype),
        )
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        c, h = state
        gates = tf.matmul(inputs, self._kernel_w) + tf.tile(h, [1, 4]) * self._kernel_u
        i, j, f, o = tf.split(value=tf.nn.bias_add(gates, self._bias), num_or_size_splits=4, axis=1)
        forget = tf.sigmoid(f + tf.constant(self._forget_bias, dtype=f.dtype))
        new_c = c * forget + tf.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)
