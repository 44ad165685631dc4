"""``npu_ops``: NPU dropout and NPU system init/shutdown, as converted scripts call them.

:func:`dropout` follows the real adapter: graph mode only, ``keep_prob`` is the probability of
*keeping* an element (TF1's convention), a Python ``1.0`` returns ``x`` itself, and otherwise it
emits ``DropOutGenMask(shape, keep_prob, seed, seed2)`` and ``DropOutDoMask(x, mask,
keep_prob)``. The two nodes run in a stock TensorFlow session (:mod:`tf2npu.client.ops`)
and the graph engine reads them as the NPU ops. The gradient of ``DropOutDoMask`` applies the
same mask to the incoming gradient. The mask generator is TensorFlow's, not the device's: the
same seeds give the same masks from run to run here, but not the device's masks.

:func:`initialize_system` and :func:`shutdown_system` add the ``NPUInit``/``NPUShutdown`` nodes
a script runs once around training. There is no NPU system to start here, so each is a
``NoOp`` marked with the private attr ``_npu_op`` (``b"NPUInit"``/``b"NPUShutdown"``); running
it does nothing.

:func:`basic_lstm_cell` (one LSTM step), :func:`LARS` and :func:`LARSV2` (layer-wise adaptive
rate scaling of gradients) emit the fused ``BasicLSTMCell`` and ``LarsV2`` ops, which run with
real CPU kernels (``docs/npu-ops.md`` gives their math and layouts).

Example:
    >>> import tensorflow as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.ones([4])
    ...     same = dropout(x, 1.0)
    >>> same is x
    True
"""

from __future__ import annotations

import numbers
from typing import Any

import tensorflow as tf
from tensorflow.core.framework.attr_value_pb2 import AttrValue

from npu_bridge.estimator.npu_unary_ops import npu_unary_ops
from tf2npu.client.ops import emit as _emit
from tf2npu.graph.npu_ops.nodes import NPU_OP_ATTR as _NPU_OP_ATTR

__all__ = [
    "DEFAULT_GRAPH_SEED",
    "LARS",
    "LARSV2",
    "NPUInit",
    "NPUShutdown",
    "basic_lstm_cell",
    "dropout",
    "get_seed",
    "initialize_system",
    "shutdown_system",
]

#: The graph-level seed used when only an op-level seed is given (TensorFlow's, too).
DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def NPUInit(name: str | None = None) -> Any:
    """The ``NPUInit`` node: a ``NoOp`` marked ``_npu_op = "NPUInit"`` (nothing to start here)."""
    return _system_op("NPUInit", "initialize_system", name)


def NPUShutdown(name: str | None = None) -> Any:
    """The ``NPUShutdown`` node: a ``NoOp`` marked ``_npu_op = "NPUShutdown"``."""
    return _system_op("NPUShutdown", "shutdown_system", name)


def initialize_system(name: str | None = None) -> Any:
    """An op that would open the NPU system when run (``NPUInit``); a no-op here."""
    return NPUInit(name)


def shutdown_system(name: str | None = None) -> Any:
    """An op that would close the NPU system when run (``NPUShutdown``); a no-op here."""
    return NPUShutdown(name)


def _system_op(op_type: str, caller: str, name: str | None) -> Any:
    _require_graph(caller)
    graph = tf.compat.v1.get_default_graph()
    with graph._attr_scope({_NPU_OP_ATTR: AttrValue(s=op_type.encode())}):
        return tf.no_op(name=name or op_type)


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The (graph, op) seed pair of a random op, resolved as the real adapter does.

    With a graph seed: ``(graph seed, op_seed)``, and without ``op_seed`` the number of ops
    the graph holds so far (the adapter reads TF 1.15's ``graph._last_id``, the same count, so
    rebuilding the same graph gives the same seeds). Without a graph seed: ``(87654321,
    op_seed)``, or ``(None, None)`` when ``op_seed`` is ``None`` too (nondeterministic). Both
    are truncated to 31 bits; ``(0, 0)``, which the kernels read as "nondeterministic", becomes
    ``(0, 2**31 - 1)``.
    """
    graph = tf.compat.v1.get_default_graph()
    seeds: tuple[int | None, int | None]
    if graph.seed is not None:
        if op_seed is None:
            op_seed = len(graph.get_operations())
        seeds = graph.seed % _MAXINT32, op_seed % _MAXINT32
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, op_seed % _MAXINT32
    else:
        seeds = None, None
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def dropout(
    x: Any,
    keep_prob: Any,
    noise_shape: Any = None,
    seed: int | None = None,
    name: str | None = None,
) -> Any:
    """Dropout with the NPU's two ops: each element kept with probability ``keep_prob``.

    Kept elements are scaled by ``1 / keep_prob``, dropped ones are 0. ``noise_shape`` is the
    shape of the mask to draw; unlike ``tf.nn.dropout`` it is not broadcast (neither does the
    device's ``DropOutDoMask``), so it must cover every element of ``x``.

    Raises:
        RuntimeError: eager execution is on.
        ValueError: ``x`` is not floating point; a Python ``keep_prob`` is outside (0, 1]; a
            ``noise_shape`` with fewer elements than ``x``.
    """
    _require_graph("dropout")
    gen, do = npu_unary_ops.drop_out_gen_mask, npu_unary_ops.drop_out_do_mask
    return _two_op_dropout("npu_ops.dropout", gen, do, x, keep_prob, noise_shape, seed, name)


def _two_op_dropout(
    api: str,
    gen_mask: Any,
    do_mask: Any,
    x: Any,
    keep_prob: Any,
    noise_shape: Any,
    seed: int | None,
    name: str | None,
) -> Any:
    """A mask op then an apply op, as ``dropout`` and ``npu_aicore_ops.dropout_v3`` build them;
    ``api`` names the caller in errors; ``gen_mask``/``do_mask`` are the two op callables. A
    Python ``keep_prob`` of 1.0 returns ``x`` itself."""
    x = tf.convert_to_tensor(x, name="x")
    if not x.dtype.is_floating:
        raise ValueError(
            f"{api}: x is a {x.dtype.name} tensor; it must be floating point because "
            "kept elements are scaled by 1/keep_prob: cast it first, e.g. tf.cast(x, tf.float32)"
        )
    if isinstance(keep_prob, numbers.Real) and not 0 < float(keep_prob) <= 1:
        raise ValueError(
            f"{api}: keep_prob={keep_prob!r} is outside (0, 1]; give the probability "
            "of KEEPING an element, e.g. 0.9 (not TF2's rate)"
        )
    if isinstance(keep_prob, float) and keep_prob == 1:
        return x
    if isinstance(keep_prob, numbers.Real):
        # The real mask ops take float or half: an int 1 would be refused by the op.
        keep_prob = float(keep_prob)
    graph_seed, op_seed = get_seed(seed)
    shape = _noise_shape(x, noise_shape)
    mask = gen_mask(shape, keep_prob, seed=graph_seed or 0, seed2=op_seed or 0, name=name)
    return do_mask(x, mask, keep_prob, name=name)


def _noise_shape(x: Any, noise_shape: Any) -> Any:
    """The mask's shape: ``x``'s, or ``noise_shape`` with unknown dims taken from ``x``."""
    if noise_shape is None:
        return tf.shape(x)
    if not tf.is_tensor(noise_shape):
        try:
            given = tf.TensorShape(noise_shape)
        except (TypeError, ValueError):  # a list holding tensors, e.g. (tf.shape(x)[0], 1, c)
            noise_shape = tf.convert_to_tensor(noise_shape, tf.int32, name="noise_shape")
    if tf.is_tensor(noise_shape):
        from tensorflow.python.framework import tensor_util

        known = tensor_util.constant_value_as_shape(noise_shape)
        if known.is_fully_defined() and x.shape.is_fully_defined():
            _require_cover(noise_shape, known.num_elements(), x)
            return noise_shape
        return _covering(x, noise_shape)
    if x.shape.rank is not None and given.rank == x.shape.rank:
        dims = zip(given.as_list(), x.shape.as_list(), strict=True)
        given = tf.TensorShape([n if n is not None else d for n, d in dims])
    if not given.is_fully_defined():
        raise ValueError(
            f"npu_ops.dropout: noise_shape={noise_shape!r} has unknown dimensions x's static "
            f"shape {x.shape} cannot fill; give every dimension, or a shape tensor"
        )
    if x.shape.is_fully_defined():
        _require_cover(noise_shape, given.num_elements(), x)
    return tf.constant(given.as_list(), tf.int32, name="noise_shape")


_NO_BROADCAST = (
    "the NPU dropout does not broadcast its mask (a Keras SpatialDropout layer asks for that); "
    "give noise_shape=None (or x's shape), and for such a layer use TF's dropout, which does: "
    "a Lambda calling tf.nn.dropout(x, rate=..., noise_shape=...)"
)


def _require_cover(noise_shape: Any, elements: int | None, x: Any) -> None:
    if elements is not None and elements < x.shape.num_elements():
        shown = noise_shape if not tf.is_tensor(noise_shape) else noise_shape.name
        raise ValueError(
            f"npu_ops.dropout: noise_shape={shown!r} has {elements} elements but x {x.shape} "
            f"has {x.shape.num_elements()}; {_NO_BROADCAST}"
        )


def _covering(x: Any, noise_shape: Any) -> Any:
    """``noise_shape`` (a tensor), checked at run time to cover every element of ``x``.

    Keras's ``SpatialDropout*`` layers ask for a mask of shape ``(batch, 1, channels)`` that
    ``tf.nn.dropout`` broadcasts; ``DropOutDoMask`` does not broadcast (on the device either),
    and failed with a bare reshape error deep in the op. This says what and why instead.
    """
    covers = tf.debugging.assert_equal(
        tf.reduce_prod(tf.cast(noise_shape, tf.int64)),
        tf.size(x, out_type=tf.int64),
        message=f"npu_ops.dropout: noise_shape has fewer elements than x; {_NO_BROADCAST}",
    )
    with tf.control_dependencies([covers]):
        # Opaque to shape inference: otherwise a static x makes graph construction fail in
        # DropOutDoMask's reshape before this check can say why.
        return tf.compat.v1.placeholder_with_default(noise_shape, noise_shape.shape)


def _require_graph(caller: str) -> None:
    if tf.executing_eagerly():
        raise RuntimeError(
            f"npu_ops.{caller} is not compatible with eager execution; build the model in a "
            "graph: `with tf.Graph().as_default():` or tf.compat.v1.disable_eager_execution()"
        )


# --- basic_lstm_cell, LARS, LARSV2 (fused NPU ops with CPU kernels: tf2npu.graph.npu_ops) ---


def basic_lstm_cell(
    x: Any,
    h: Any,
    c: Any,
    w: Any,
    b: Any,
    keep_prob: float,
    forget_bias: float,
    state_is_tuple: bool,
    activation: str,
    name: str | None = None,
) -> tuple[Any, ...]:
    """One LSTM step as the fused ``BasicLSTMCell`` op: ``(ct, ht, it, jt, ft, ot, tanhct)``.

    ``x`` is ``[batch, input]``, ``h`` and ``c`` ``[batch, hidden]``, ``w``
    ``[input + hidden, 4 * hidden]`` with gate columns ``i, j, f, o`` and ``b``
    ``[4 * hidden]``: TF's ``BasicLSTMCell`` kernel and bias fit unchanged, and the result
    equals that cell's with the same ``forget_bias``. The gates come back activated
    (``it = sigmoid(i)``, ``jt = tanh(j)``, ``ft = sigmoid(f + forget_bias)``,
    ``ot = sigmoid(o)``). Differentiable in ``x``, ``h``, ``c``, ``w`` and ``b``.

    Raises:
        RuntimeError: eager execution is on.
        ValueError: ``keep_prob`` other than 1, ``activation`` other than ``"tanh"``, or
            inputs of the wrong rank or mismatching sizes.
    """
    _require_graph("basic_lstm_cell")
    if float(keep_prob) != 1.0 or activation != "tanh":
        raise ValueError(
            f"npu_ops.basic_lstm_cell: keep_prob={keep_prob!r}, activation={activation!r}; "
            "only keep_prob=1.0 and activation='tanh' are computed (as on the device); apply "
            "npu_ops.dropout to x for dropout"
        )
    given = zip((x, h, c, w, b), "xhcwb", strict=True)
    tensors = [tf.convert_to_tensor(t, name=n) for t, n in given]
    _check_lstm_shapes(*tensors)
    attrs = {
        "keep_prob": 1.0,
        "forget_bias": float(forget_bias),
        "state_is_tuple": bool(state_is_tuple),
        "activation": activation,
    }
    outputs = _emit("BasicLSTMCell", tensors, attrs, name=name)
    for tensor in outputs:
        tensor.set_shape(tensors[2].shape)
    return tuple(outputs)


def _check_lstm_shapes(x: Any, h: Any, c: Any, w: Any, b: Any) -> None:
    ranks = {"x": (x, 2), "h": (h, 2), "c": (c, 2), "w": (w, 2), "b": (b, 1)}
    for label, (tensor, rank) in ranks.items():
        if tensor.shape.rank not in (None, rank):
            raise ValueError(
                f"npu_ops.basic_lstm_cell: {label} has shape {tensor.shape}; it must have rank "
                f"{rank} (x [batch, input], h and c [batch, hidden], w [input + hidden, "
                "4 * hidden], b [4 * hidden])"
            )
    dims = [
        tf.compat.dimension_value(d)
        for d in (x.shape[-1], h.shape[-1], w.shape[0], w.shape[-1], b.shape[-1])
    ]
    size_in, hidden, rows, cols, bias = dims
    if None not in (size_in, hidden, rows) and rows != size_in + hidden:
        raise ValueError(
            f"npu_ops.basic_lstm_cell: w has {rows} rows but x and h have {size_in} + {hidden} "
            "columns; w must be [input + hidden, 4 * hidden]"
        )
    if hidden is not None and any(n not in (None, 4 * hidden) for n in (cols, bias)):
        raise ValueError(
            f"npu_ops.basic_lstm_cell: w {w.shape} and b {b.shape} must have 4 * hidden = "
            f"{4 * hidden} columns (gates i, j, f, o)"
        )


def LARS(
    inputs_w: Any,
    inputs_g: Any,
    weight_decay: Any,
    hyperpara: float = 0.001,
    epsilon: float = 0.00001,
    name: str | None = None,
) -> list[Any]:
    """LARS-scaled gradients for lists of weights and their gradients (``LarsV2`` per pair).

    Each output is ``coeff * (g + weight_decay * w)`` with
    ``coeff = hyperpara * ||w|| / (||g|| + weight_decay * ||w|| + epsilon)`` (norms over the
    whole tensor). ``weight_decay`` is a float or a float32 scalar tensor.

    Raises:
        RuntimeError: eager execution is on.
        ValueError: the lists differ in length or are empty; a weight and its gradient differ
            in shape.
    """
    _require_graph("LARS")
    weights, grads = list(inputs_w), list(inputs_g)
    if not weights or len(weights) != len(grads):
        raise ValueError(
            f"npu_ops.LARS: inputs_w has {len(weights)} tensors and inputs_g {len(grads)}; "
            "give one gradient per weight, in the same order (at least one)"
        )
    with tf.name_scope(name or "LARS"):
        decay = tf.convert_to_tensor(weight_decay, tf.float32, name="weight_decay")
        one = tf.constant(1.0, tf.float32, name="learning_rate")
        return [
            LARSV2(w, g, decay, one, hyperpara, epsilon, use_clip=False)
            for w, g in zip(weights, grads, strict=True)
        ]


def LARSV2(
    input_weight: Any,
    input_grad: Any,
    weight_decay: Any,
    learning_rate: Any,
    hyperpara: float = 0.001,
    epsilon: float = 0.00001,
    use_clip: bool = False,
    name: str | None = None,
) -> Any:
    """The LARS-scaled gradient of one weight, as the fused ``LarsV2`` op (float32).

    ``coeff = hyperpara * ||w|| / (||g|| + weight_decay * ||w|| + epsilon)``; with
    ``use_clip`` it becomes ``clip(coeff / learning_rate, 0, 1)``; the result is
    ``coeff * (g + weight_decay * w)``. ``learning_rate`` is read only with ``use_clip``.

    Raises:
        RuntimeError: eager execution is on.
        TypeError: an input is not float32.
        ValueError: the weight and gradient differ in shape.
    """
    _require_graph("LARSV2")
    w = tf.convert_to_tensor(input_weight, name="input_weight")
    g = tf.convert_to_tensor(input_grad, name="input_grad")
    if not w.shape.is_compatible_with(g.shape):
        raise ValueError(
            f"npu_ops.LARSV2: input_weight has shape {w.shape} but input_grad {g.shape}; pass "
            "each weight with its own gradient"
        )
    attrs = {"hyperpara": float(hyperpara), "epsilon": float(epsilon), "use_clip": bool(use_clip)}
    output = _emit("LarsV2", [w, g, weight_decay, learning_rate], attrs, name=name)[0]
    output.set_shape(w.shape)
    return output
