"""TF 1.15's block and fused cells on TF 2.15's ``LSTMBlockCell``/``BlockLSTM``/``GRUBlockCell``.

TF 2.15 still has the kernels TF 1.15's contrib cells ran (``tf.raw_ops.LSTMBlockCell``,
``BlockLSTM``, ``GRUBlockCell`` and their ``*Grad`` ops), and registers the gradient of
``BlockLSTM`` only; the two single-step gradients, which TF 1.15 registered in contrib, are
registered here when this module is first imported.

The LSTM kernels take ``w`` ``[input + units, 4 * units]`` with the gate columns in the order
``i, c, f, o`` (input, candidate, forget, output) and compute, with ``xh = [x, h_prev]``::

    i = sigmoid(xh w_i + b_i + wci * cs_prev)          # peepholes only with use_peephole
    f = sigmoid(xh w_f + b_f + forget_bias + wcf * cs_prev)
    cs = clip(i * tanh(xh w_c + b_c) + f * cs_prev, cell_clip)   # no clip if cell_clip < 0
    o = sigmoid(xh w_o + b_o + wco * cs);  h = o * tanh(cs)

Variables (TF 1.15's names): ``lstm_cell/{kernel, bias, w_i_diag, w_f_diag, w_o_diag}``,
``lstm_fused_cell/...`` for the fused cell, ``gru_cell/{w_ru, b_ru, w_c, b_c}`` (bias
``b_ru`` starts at 1) and, for ``GRUBlockCellV2``, ``gru_cell/{gates,candidate}/{kernel,bias}``.
"""

from __future__ import annotations

import abc
from typing import Any

import tensorflow.compat.v1 as tf
from tensorflow.python.framework import ops
from tensorflow.python.ops import gen_nn_ops, gen_rnn_ops

from tf2npu.compat.contrib.rnn.base import LayerRNNCell, LSTMStateTuple


def _lstm_block_cell_grad(op: Any, *grad: Any) -> tuple[Any, ...]:
    """Gradient of one ``LSTMBlockCell`` step (as TF 1.15's contrib registered it)."""
    x, cs_prev, h_prev, w, wci, wcf, wco, b = op.inputs
    i, cs, f, o, ci, co, _ = op.outputs
    _, cs_grad, _, _, _, _, h_grad = grad
    batch = tf.compat.dimension_value(x.get_shape().with_rank(2)[0]) or -1
    input_size = tf.compat.dimension_value(x.get_shape().with_rank(2)[1])
    cell_size = tf.compat.dimension_value(cs_prev.get_shape().with_rank(2)[1])
    if input_size is None or cell_size is None:
        raise ValueError("LSTMBlockCell gradient needs static input and cell sizes")
    cs_prev_grad, dgates, wci_grad, wcf_grad, wco_grad = gen_rnn_ops.lstm_block_cell_grad(
        x=x, cs_prev=cs_prev, h_prev=h_prev, w=w, wci=wci, wcf=wcf, wco=wco, b=b,
        i=i, cs=cs, f=f, o=o, ci=ci, co=co, cs_grad=cs_grad, h_grad=h_grad,
        use_peephole=op.get_attr("use_peephole"),
    )  # fmt: skip
    xh_grad = tf.matmul(dgates, w, transpose_b=True)
    x_grad = tf.slice(xh_grad, (0, 0), (batch, input_size))
    h_prev_grad = tf.slice(xh_grad, (0, input_size), (batch, cell_size))
    w_grad = tf.matmul(tf.concat([x, h_prev], 1), dgates, transpose_a=True)
    b_grad = gen_nn_ops.bias_add_grad(dgates)
    return x_grad, cs_prev_grad, h_prev_grad, w_grad, wci_grad, wcf_grad, wco_grad, b_grad


def _gru_block_cell_grad(op: Any, *grad: Any) -> tuple[Any, ...]:
    """Gradient of one ``GRUBlockCell`` step (as TF 1.15's contrib registered it)."""
    x, h_prev, w_ru, w_c, b_ru, b_c = op.inputs
    r, u, c, _ = op.outputs
    d_h = grad[3]
    d_x, d_h_prev, d_c_bar, d_r_bar_u_bar = gen_rnn_ops.gru_block_cell_grad(
        x, h_prev, w_ru, w_c, b_ru, b_c, r, u, c, d_h
    )
    d_w_ru = tf.matmul(tf.concat([x, h_prev], 1), d_r_bar_u_bar, transpose_a=True)
    d_w_c = tf.matmul(tf.concat([x, h_prev * r], 1), d_c_bar, transpose_a=True)
    return (
        d_x,
        d_h_prev,
        d_w_ru,
        d_w_c,
        gen_nn_ops.bias_add_grad(d_r_bar_u_bar),
        gen_nn_ops.bias_add_grad(d_c_bar),
    )


def _register_gradients() -> None:
    registered = set(ops._gradient_registry.list())
    for op_type, fn in (
        ("LSTMBlockCell", _lstm_block_cell_grad),
        ("GRUBlockCell", _gru_block_cell_grad),
    ):
        if op_type not in registered:
            ops.RegisterGradient(op_type)(fn)


_register_gradients()


def _peepholes(cell: Any, dtype: Any) -> tuple[Any, Any, Any]:
    if cell._use_peephole:
        return cell._w_i_diag, cell._w_f_diag, cell._w_o_diag
    zeros = tf.zeros([cell._num_units], dtype=dtype)
    return zeros, zeros, zeros


def _add_lstm_variables(layer: Any, input_size: int, num_units: int, peephole: bool) -> None:
    layer._kernel = layer.add_weight("kernel", [input_size + num_units, num_units * 4])
    layer._bias = layer.add_weight(
        "bias", [num_units * 4], initializer=tf.constant_initializer(0.0)
    )
    if peephole:
        layer._w_i_diag = layer.add_weight("w_i_diag", [num_units])
        layer._w_f_diag = layer.add_weight("w_f_diag", [num_units])
        layer._w_o_diag = layer.add_weight("w_o_diag", [num_units])


class LSTMBlockCell(LayerRNNCell):  # type: ignore[misc]
    """One LSTM step in one kernel (``LSTMBlockCell``); a drop-in for ``LSTMCell``."""

    def __init__(
        self,
        num_units: int,
        forget_bias: float = 1.0,
        cell_clip: float | None = None,
        use_peephole: bool = False,
        dtype: Any = None,
        reuse: Any = None,
        name: str = "lstm_cell",
    ) -> None:
        super().__init__(_reuse=reuse, dtype=dtype, name=name)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._use_peephole = use_peephole
        self._cell_clip = cell_clip if cell_clip is not None else -1
        self.input_spec = tf.keras.layers.InputSpec(ndim=2)

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: Any) -> None:
        input_size = tf.compat.dimension_value(tf.TensorShape(inputs_shape)[1])
        if not input_size:
            raise ValueError(f"Expecting inputs_shape[1] to be set: {inputs_shape}")
        _add_lstm_variables(self, input_size, self._num_units, self._use_peephole)
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        """``(h, LSTMStateTuple(cs, h))`` for one step."""
        if len(state) != 2:
            raise ValueError("Expecting state to be a tuple with length 2.")
        wci, wcf, wco = _peepholes(self, self.dtype)
        cs_prev, h_prev = state
        _, cs, _, _, _, _, h = gen_rnn_ops.lstm_block_cell(
            x=inputs, cs_prev=cs_prev, h_prev=h_prev, w=self._kernel, wci=wci, wcf=wcf,
            wco=wco, b=self._bias, forget_bias=self._forget_bias, cell_clip=self._cell_clip,
            use_peephole=self._use_peephole,
        )  # fmt: skip
        return h, LSTMStateTuple(cs, h)


class LSTMBlockWrapper(tf.layers.Layer, abc.ABC):  # type: ignore[misc]
    """A time-major LSTM over a whole sequence, called like a ``FusedRNNCell``.

    ``cell(inputs [time, batch, input] or a list of [batch, input], initial_state=None,
    dtype=None, sequence_length=None)`` returns ``(outputs, LSTMStateTuple(c, h))``; outputs
    past each length are zeros and the final state is taken at each sequence's length.
    """

    @property
    @abc.abstractmethod
    def num_units(self) -> int:
        """The cell's number of units."""

    @abc.abstractmethod
    def _call_cell(
        self, inputs: Any, initial_cell_state: Any, initial_output: Any, dtype: Any, lengths: Any
    ) -> tuple[Any, Any]:
        """``(cell states, outputs)`` ``[time, batch, units]`` each."""

    def call(
        self, inputs: Any, initial_state: Any = None, dtype: Any = None, sequence_length: Any = None
    ) -> tuple[Any, Any]:
        is_list = isinstance(inputs, list)
        if is_list:
            inputs = tf.stack(inputs)
        shape = inputs.get_shape().with_rank(3)
        if not shape[2]:
            raise ValueError(f"Expecting inputs_shape[2] to be set: {shape}")
        batch = tf.compat.dimension_value(shape[1]) or tf.shape(inputs)[1]
        time_len = tf.compat.dimension_value(shape[0]) or tf.shape(inputs)[0]
        if initial_state is None:
            if dtype is None:
                raise ValueError("Either initial_state or dtype needs to be specified")
            z = tf.zeros(tf.stack([batch, self.num_units]), dtype=dtype)
            initial_state = (z, z)
        else:
            if len(initial_state) != 2:
                raise ValueError("Expecting initial_state to be a tuple with length 2 or None")
            dtype = dtype or initial_state[0].dtype
        if sequence_length is not None:
            sequence_length = tf.convert_to_tensor(sequence_length)
        c0, h0 = initial_state
        cell_states, outputs = self._call_cell(inputs, c0, h0, dtype, sequence_length)
        if sequence_length is None:
            final_c, final_h = cell_states[-1], outputs[-1]
        else:
            mask = tf.transpose(tf.sequence_mask(sequence_length, time_len, dtype=dtype), [1, 0])
            outputs *= tf.tile(tf.expand_dims(mask, [-1]), [1, 1, self.num_units])
            rows = tf.stack([sequence_length, tf.range(batch)], axis=1)
            final_c = tf.gather_nd(tf.concat([tf.expand_dims(c0, [0]), cell_states], 0), rows)
            final_h = tf.gather_nd(tf.concat([tf.expand_dims(h0, [0]), outputs], 0), rows)
        if is_list:
            outputs = tf.unstack(outputs)
        return outputs, LSTMStateTuple(final_c, final_h)


class LSTMBlockFusedCell(LSTMBlockWrapper):
    """The whole sequence in one ``BlockLSTM`` kernel; variables ``lstm_fused_cell/...``."""

    def __init__(
        self,
        num_units: int,
        forget_bias: float = 1.0,
        cell_clip: float | None = None,
        use_peephole: bool = False,
        reuse: Any = None,
        dtype: Any = None,
        name: str = "lstm_fused_cell",
    ) -> None:
        super().__init__(_reuse=reuse, name=name, dtype=dtype)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._cell_clip = cell_clip if cell_clip is not None else -1
        self._use_peephole = use_peephole
        self.input_spec = tf.keras.layers.InputSpec(ndim=3)

    @property
    def num_units(self) -> int:
        return self._num_units

    def build(self, input_shape: Any) -> None:
        input_size = tf.compat.dimension_value(tf.TensorShape(input_shape)[2])
        _add_lstm_variables(self, input_size, self._num_units, self._use_peephole)
        self.built = True

    def _call_cell(
        self, inputs: Any, initial_cell_state: Any, initial_output: Any, dtype: Any, lengths: Any
    ) -> tuple[Any, Any]:
        time_len = tf.compat.dimension_value(inputs.get_shape().with_rank(3)[0])
        if time_len is None:
            time_len = tf.shape(inputs)[0]
        wci, wcf, wco = _peepholes(self, dtype)
        if lengths is None:
            max_len = tf.cast(time_len, tf.int64)
        else:
            max_len = tf.cast(tf.reduce_max(lengths), tf.int64)
        _, cs, _, _, _, _, h = gen_rnn_ops.block_lstm(
            seq_len_max=max_len, x=inputs, cs_prev=initial_cell_state, h_prev=initial_output,
            w=self._kernel, wci=wci, wcf=wcf, wco=wco, b=self._bias,
            forget_bias=self._forget_bias, cell_clip=self._cell_clip,
            use_peephole=self._use_peephole,
        )  # fmt: skip
        return cs, h


class GRUBlockCell(LayerRNNCell):  # type: ignore[misc]
    """One GRU step in one kernel (``GRUBlockCell``)::

    r, u = sigmoid([x, h] w_ru + b_ru);  c = tanh([x, r * h] w_c + b_c);  h' = u * h + (1 - u) * c
    """

    def __init__(
        self,
        num_units: int | None = None,
        cell_size: int | None = None,
        reuse: Any = None,
        name: str = "gru_cell",
    ) -> None:
        super().__init__(_reuse=reuse, name=name)
        if (cell_size is None) == (num_units is None):
            raise ValueError("Exactly one of num_units or cell_size must be provided.")
        self._cell_size = int(num_units if num_units is not None else cell_size)  # type: ignore[arg-type]
        self.input_spec = tf.keras.layers.InputSpec(ndim=2)

    _NAMES = ("w_ru", "b_ru", "w_c", "b_c")

    @property
    def state_size(self) -> int:
        return self._cell_size

    @property
    def output_size(self) -> int:
        return self._cell_size

    def build(self, input_shape: Any) -> None:
        input_size = tf.compat.dimension_value(tf.TensorShape(input_shape)[1])
        if input_size is None:
            raise ValueError("Expecting input_size to be set.")
        w_ru, b_ru, w_c, b_c = self._NAMES
        width = input_size + self._cell_size
        self._gate_kernel = self.add_weight(w_ru, [width, self._cell_size * 2])
        self._gate_bias = self.add_weight(
            b_ru, [self._cell_size * 2], initializer=tf.constant_initializer(1.0)
        )
        self._candidate_kernel = self.add_weight(w_c, [width, self._cell_size])
        self._candidate_bias = self.add_weight(
            b_c, [self._cell_size], initializer=tf.constant_initializer(0.0)
        )
        self.built = True

    def call(self, inputs: Any, h_prev: Any) -> tuple[Any, Any]:
        """``(h, h)`` for one step."""
        cell_size = h_prev.get_shape().with_rank(2)[1]
        if cell_size != self._cell_size:
            raise ValueError(
                f"Shape of h_prev[1] incorrect: cell_size {self._cell_size} vs {cell_size}"
            )
        _, _, _, new_h = gen_rnn_ops.gru_block_cell(
            x=inputs,
            h_prev=h_prev,
            w_ru=self._gate_kernel,
            w_c=self._candidate_kernel,
            b_ru=self._gate_bias,
            b_c=self._candidate_bias,
        )
        return new_h, new_h


class GRUBlockCellV2(GRUBlockCell):
    """``GRUBlockCell`` with ``GRUCell``'s variable names (``gates/kernel``, ``candidate/...``)."""

    _NAMES = ("gates/kernel", "gates/bias", "candidate/kernel", "candidate/bias")
