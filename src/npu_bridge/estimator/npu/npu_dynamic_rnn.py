"""``npu_dynamic_rnn``: the adapter's layers over Ascend's fused RNN ops.

``DynamicRNN`` (an LSTM), ``DynamicGRUV2`` and ``DynamicAUGRU`` (DIEN's GRU with attentional
update gate) are TF1 layers: they create their variables on first call, with the real layers'
names, shapes and initializers, and emit one fused NPU op (``DynamicRnn``, ``DynamicGruV2``,
``DynamicAUGRU``; :mod:`tf2npu.graph.npu_ops`) that a stock session runs with a real CPU kernel
and differentiates. Inputs are time-major, ``[time, batch, input]``; a call returns every output
of the op as a tuple (8 for the LSTM, 6 for the GRU, 7 for the AUGRU)::

    y, output_h, output_c, i, j, f, o, tanhc = DynamicRNN(128, tf.float32)(x)

Variables: ``DynamicRNN`` has ``dynamicrnn/w`` ``[input + hidden, 4 * hidden]`` (gate columns
``i, j, f, o``, TF's ``BasicLSTMCell`` layout) and ``dynamicrnn/b``; the GRUs have
``weight_input`` ``[input, 3 * hidden]``, ``weight_hidden`` ``[hidden, 3 * hidden]``,
``bias_input`` and ``bias_hidden`` under ``dynamicgruv2/`` or ``dynamicaugru/``, gate blocks in
``gate_order``. Every layer also has the non-trainable ``dynamicbase/seq_length``, as the real
one; without a ``seq_length`` argument every sequence runs the full length here (the real
layer feeds that variable, which holds the static time dimension).

What the device kernels do not implement is refused with a ``ValueError`` that names the
argument and what to do: ``direction="BIDIRECTIONAL"``, ``cell_depth != 1``,
``keep_prob != 1``, ``num_proj != 0``, ``time_major=False``, an activation other than tanh,
``use_peephole=True`` and a ``cell_type`` other than ``"LSTM"``. ``is_training`` has no effect
here: the gate outputs are always computed.
"""

from __future__ import annotations

import math as _math
from typing import Any

import tensorflow as tf

# Private names: the module's public surface is the adapter's (tests/npu_bridge/...surface).
from tf2npu.client.ops import emit as _emit_op
from tf2npu.graph.npu_ops._recurrent import DIRECTIONS as _DIRECTIONS
from tf2npu.graph.npu_ops._recurrent import check_unsupported as _check_unsupported
from tf2npu.graph.npu_ops.gru import DYNAMIC_GRU_SUPPORTED as _GRU_CHECKED
from tf2npu.graph.npu_ops.gru import GATE_ORDERS as _GATE_ORDERS
from tf2npu.graph.npu_ops.lstm import DYNAMIC_RNN_SUPPORTED as _LSTM_CHECKED

__all__ = [
    "DYNAMIC_RNN_BIDIRECTION",
    "DYNAMIC_RNN_UNIDIRECTION",
    "DynamicAUGRU",
    "DynamicGRUV2",
    "DynamicRNN",
]

DYNAMIC_RNN_UNIDIRECTION = _DIRECTIONS[0]
DYNAMIC_RNN_BIDIRECTION = _DIRECTIONS[1]


class _DynamicBasic(tf.compat.v1.layers.Layer):  # type: ignore[misc]
    """What the three layers share: the common attrs, ``seq_length``, input checks."""

    def __init__(
        self,
        hidden_size: int,
        dtype: Any,
        direction: str = DYNAMIC_RNN_UNIDIRECTION,
        cell_depth: int = 1,
        keep_prob: float = 1.0,
        cell_clip: float = -1.0,
        num_proj: int = 0,
        time_major: bool = True,
        activation: str = "tanh",
        is_training: bool = True,
    ) -> None:
        self._rnn_dtype = tf.as_dtype(dtype)
        # autocast off: the op takes the inputs' dtype; a float16 x must stay float16.
        super().__init__(dtype=self._rnn_dtype, autocast=False)
        self._hidden_size = int(hidden_size)
        self._args: dict[str, Any] = {
            "direction": direction,
            "cell_depth": int(cell_depth),
            "keep_prob": float(keep_prob),
            "cell_clip": float(cell_clip),
            "num_proj": int(num_proj),
            "time_major": bool(time_major),
            "activation": activation,
            "is_training": bool(is_training),
        }
        self._seq_length: Any = None

    direction = property(lambda self: self._args["direction"])
    cell_depth = property(lambda self: self._args["cell_depth"])
    keep_prob = property(lambda self: self._args["keep_prob"])
    cell_clip = property(lambda self: self._args["cell_clip"])
    num_proj = property(lambda self: self._args["num_proj"])
    time_major = property(lambda self: self._args["time_major"])
    activation = property(lambda self: self._args["activation"])
    is_training = property(lambda self: self._args["is_training"])

    def check_direction(self) -> None:
        """Raise ``ValueError`` unless ``direction`` is one the adapter knows."""
        if self.direction not in _DIRECTIONS:
            raise ValueError(
                f"{type(self).__name__}: invalid direction {self.direction!r}, expecting "
                f"{_DIRECTIONS[0]!r} or {_DIRECTIONS[1]!r}"
            )

    def build(self, input_shape: Any) -> None:
        given = tf.TensorShape(input_shape)
        # Plain ints or None (TF1 behaviour indexes shapes into Dimension objects).
        shape = [tf.compat.dimension_value(d) for d in given] if given.rank else []
        if len(shape) != 3 or shape[2] is None:
            raise ValueError(
                f"{type(self).__name__}: x has shape {given}; it must be time-major "
                "[time, batch, input] with the input size known (transpose batch-major "
                "inputs with tf.transpose(x, [1, 0, 2]))"
            )
        # The real layer's variable (batch 16 and time 1 when unknown): kept for checkpoints.
        self._seq_length = self.add_weight(
            "dynamicbase/seq_length",
            shape=[shape[1] or 16],
            dtype=tf.int32,
            initializer=tf.compat.v1.constant_initializer(shape[0] or 1),
            trainable=False,
        )
        self._add_weights(shape)
        # Last: once built, the legacy layer's add_weight only reuses existing variables.
        super().build(input_shape)

    def _add_weights(self, shape: list[int | None]) -> None:
        raise NotImplementedError

    def _uniform(self, name: str, shape: list[int]) -> Any:
        stdv = 1.0 / _math.sqrt(self._hidden_size)
        init = tf.compat.v1.random_uniform_initializer(-stdv, stdv)
        return self.add_weight(name, shape=shape, dtype=self._rnn_dtype, initializer=init)

    def _prepare(self, op_name: str, x: Any, checked: tuple[str, ...]) -> tuple[Any, Any]:
        """``x`` as a tensor and its batch size (static int or scalar tensor), attrs checked."""
        self.check_direction()
        _check_unsupported(f"{type(self).__name__} ({op_name})", self._args, checked)
        x = tf.convert_to_tensor(x, name="x")
        batch = tf.compat.dimension_value(x.shape[1]) if x.shape.rank == 3 else None
        return x, batch if batch is not None else tf.shape(x)[1]

    def _full_length(self, x: Any, batch: Any) -> Any:
        return tf.fill(tf.reshape(batch, [1]), tf.shape(x)[0])

    def _emit(
        self, op_name: str, x: Any, inputs: list[Any], attrs: dict[str, Any]
    ) -> tuple[Any, ...]:
        outputs = _emit_op(op_name, inputs, attrs, name=op_name)
        # The op's shapes ([time, batch, hidden] for all outputs) for the layers that follow.
        static = x.shape[:2].concatenate([self._hidden_size]) if x.shape.rank == 3 else None
        for tensor in outputs:
            if static is not None:
                tensor.set_shape(static)
        return tuple(outputs)


class DynamicRNN(_DynamicBasic):
    """A one-layer LSTM over time-major inputs, as the fused ``DynamicRnn`` op.

    ``forget_bias`` is added to the forget gate before its sigmoid (default 0.0, unlike TF's
    ``BasicLSTMCell``); ``cell_clip > 0`` bounds the cell state from above.
    """

    def __init__(
        self,
        hidden_size: int,
        dtype: Any,
        cell_type: str = "LSTM",
        direction: str = DYNAMIC_RNN_UNIDIRECTION,
        cell_depth: int = 1,
        use_peephole: bool = False,
        keep_prob: float = 1.0,
        cell_clip: float = -1.0,
        num_proj: int = 0,
        time_major: bool = True,
        activation: str = "tanh",
        forget_bias: float = 0.0,
        is_training: bool = True,
    ) -> None:
        super().__init__(
            hidden_size,
            dtype,
            direction,
            cell_depth,
            keep_prob,
            cell_clip,
            num_proj,
            time_major,
            activation,
            is_training,
        )
        self._args.update(
            cell_type=cell_type, use_peephole=bool(use_peephole), forget_bias=float(forget_bias)
        )
        self._rnn_w: Any = None
        self._rnn_b: Any = None

    cell_type = property(lambda self: self._args["cell_type"])
    use_peephole = property(lambda self: self._args["use_peephole"])
    forget_bias = property(lambda self: self._args["forget_bias"])

    def _add_weights(self, shape: list[int | None]) -> None:
        size = int(shape[2] or 0) + self._hidden_size
        self._rnn_w = self.add_weight(
            "dynamicrnn/w",
            shape=[size, 4 * self._hidden_size],
            dtype=self._rnn_dtype,
            initializer=tf.compat.v1.glorot_uniform_initializer(seed=10),
        )
        self._rnn_b = self.add_weight(
            "dynamicrnn/b",
            shape=[4 * self._hidden_size],
            dtype=self._rnn_dtype,
            initializer=tf.compat.v1.zeros_initializer(),
        )

    def call(
        self,
        x: Any,
        seq_length: Any = None,
        init_h: Any = None,
        init_c: Any = None,
        weight: Any = None,
        bias: Any = None,
    ) -> tuple[Any, ...]:
        """``(y, output_h, output_c, i, j, f, o, tanhc)``, each ``[time, batch, hidden]``.

        ``init_h``/``init_c`` default to zeros ``[1, batch, hidden]``; ``weight``/``bias``
        replace the layer's variables; ``seq_length`` (int32 ``[batch]``) masks steps.
        """
        x, batch = self._prepare("DynamicRnn", x, _LSTM_CHECKED)
        zeros = tf.zeros(tf.stack([1, batch, self._hidden_size]), dtype=self._rnn_dtype)
        inputs = [
            x,
            self._rnn_w if weight is None else weight,
            self._rnn_b if bias is None else bias,
            self._full_length(x, batch) if seq_length is None else seq_length,
            zeros if init_h is None else init_h,
            zeros if init_c is None else init_c,
        ]
        return self._emit("DynamicRnn", x, inputs, self._args)


class _DynamicGRU(_DynamicBasic):
    """The GRU layers' shared part: ``gate_order``, ``reset_after`` and the four variables."""

    _OP = ""
    _SCOPE = ""

    def __init__(
        self,
        hidden_size: int,
        dtype: Any,
        direction: str = DYNAMIC_RNN_UNIDIRECTION,
        cell_depth: int = 1,
        keep_prob: float = 1.0,
        cell_clip: float = -1.0,
        num_proj: int = 0,
        time_major: bool = True,
        activation: str = "tanh",
        gate_order: str = "zrh",
        reset_after: bool = True,
        is_training: bool = True,
    ) -> None:
        super().__init__(
            hidden_size,
            dtype,
            direction,
            cell_depth,
            keep_prob,
            cell_clip,
            num_proj,
            time_major,
            activation,
            is_training,
        )
        self._args.update(gate_order=gate_order, reset_after=bool(reset_after))
        self._weights: tuple[Any, ...] = ()

    gate_order = property(lambda self: self._args["gate_order"])
    reset_after = property(lambda self: self._args["reset_after"])

    def _add_weights(self, shape: list[int | None]) -> None:
        size, gates = int(shape[2] or 0), 3 * self._hidden_size
        self._weights = (
            self._uniform(f"{self._SCOPE}/weight_input", [size, gates]),
            self._uniform(f"{self._SCOPE}/weight_hidden", [self._hidden_size, gates]),
            self._uniform(f"{self._SCOPE}/bias_input", [gates]),
            self._uniform(f"{self._SCOPE}/bias_hidden", [gates]),
        )

    def _run(self, x: Any, att: Any, seq_length: Any, init_h: Any) -> tuple[Any, ...]:
        x, batch = self._prepare(self._OP, x, _GRU_CHECKED)
        if self.gate_order not in _GATE_ORDERS or not self.reset_after:
            raise ValueError(
                f"{type(self).__name__}: gate_order={self.gate_order!r}, reset_after="
                f"{self.reset_after!r}; the Ascend kernel and tf2npu support gate_order "
                f"{_GATE_ORDERS[0]!r} or {_GATE_ORDERS[1]!r} with reset_after=True"
            )
        w_in, w_hid, b_in, b_hid = self._weights
        if init_h is None:
            init_h = tf.zeros(tf.stack([batch, self._hidden_size]), dtype=self._rnn_dtype)
        if seq_length is None:
            seq_length = self._full_length(x, batch)
        middle = [w_in, w_hid] + ([] if att is None else [att]) + [b_in, b_hid]
        return self._emit(self._OP, x, [x, *middle, seq_length, init_h], self._args)


class DynamicGRUV2(_DynamicGRU):
    """A one-layer GRU over time-major inputs, as the fused ``DynamicGruV2`` op
    (``h' = z·h + (1 − z)·n``, reset applied after the hidden matmul)."""

    _OP = "DynamicGruV2"
    _SCOPE = "dynamicgruv2"

    def call(self, x: Any, seq_length: Any = None, init_h: Any = None) -> tuple[Any, ...]:
        """``(y, output_h, update, reset, new, hidden_new)``, each ``[time, batch, hidden]``."""
        return self._run(x, None, seq_length, init_h)


class DynamicAUGRU(_DynamicGRU):
    """DIEN's GRU with attentional update gate, as the fused ``DynamicAUGRU`` op: the update
    gate becomes ``(1 − a_t)·z`` with ``a`` = ``weight_att`` ``[time, batch]``."""

    _OP = "DynamicAUGRU"
    _SCOPE = "dynamicaugru"

    def call(
        self, x: Any, weight_att: Any, seq_length: Any = None, init_h: Any = None
    ) -> tuple[Any, ...]:
        """``(y, output_h, update, update_att, reset, new, hidden_new)``."""
        return self._run(x, weight_att, seq_length, init_h)
