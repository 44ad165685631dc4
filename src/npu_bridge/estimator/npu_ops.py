"""``npu_ops``: NPU dropout and NPU system init/shutdown, as converted scripts call them.

:func:`dropout` follows the real adapter: graph mode only, ``keep_prob`` is the probability of
*keeping* an element (TF1's convention), a Python ``1.0`` returns ``x`` itself, and otherwise it
emits ``DropOutGenMask(shape, keep_prob, seed, seed2)`` and ``DropOutDoMask(x, mask,
keep_prob)``. The two nodes run in a stock TensorFlow session (:mod:`tf2npu.graph.npu_ops.client`)
and the graph engine reads them as the NPU ops. The gradient of ``DropOutDoMask`` applies the
same mask to the incoming gradient. The mask generator is TensorFlow's, not the device's: the
same seeds give the same masks from run to run here, but not the device's masks.

:func:`initialize_system` and :func:`shutdown_system` add the ``NPUInit``/``NPUShutdown`` nodes
a script runs once around training. There is no NPU system to start here, so each is a
``NoOp`` marked with the private attr ``_npu_op`` (``b"NPUInit"``/``b"NPUShutdown"``); running
it does nothing.

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
from tf2npu.graph.npu_ops.client import NPU_OP_ATTR as _NPU_OP_ATTR

__all__ = [
    "DEFAULT_GRAPH_SEED",
    "NPUInit",
    "NPUShutdown",
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
    x = tf.convert_to_tensor(x, name="x")
    if not x.dtype.is_floating:
        raise ValueError(
            f"npu_ops.dropout: x is a {x.dtype.name} tensor; it must be floating point because "
            "kept elements are scaled by 1/keep_prob: cast it first, e.g. tf.cast(x, tf.float32)"
        )
    if isinstance(keep_prob, numbers.Real) and not 0 < float(keep_prob) <= 1:
        raise ValueError(
            f"npu_ops.dropout: keep_prob={keep_prob!r} is outside (0, 1]; give the probability "
            "of KEEPING an element, e.g. 0.9 (not TF2's rate)"
        )
    if isinstance(keep_prob, float) and keep_prob == 1:
        return x
    if isinstance(keep_prob, numbers.Real):
        # The real DropOutGenMask takes float or half: an int 1 would be refused by the op.
        keep_prob = float(keep_prob)
    graph_seed, op_seed = get_seed(seed)
    shape = _noise_shape(x, noise_shape)
    mask = npu_unary_ops.drop_out_gen_mask(
        shape, keep_prob, seed=graph_seed or 0, seed2=op_seed or 0, name=name
    )
    return npu_unary_ops.drop_out_do_mask(x, mask, keep_prob, name=name)


def _noise_shape(x: Any, noise_shape: Any) -> Any:
    """The mask's shape: ``x``'s, or ``noise_shape`` with unknown dims taken from ``x``."""
    if noise_shape is None:
        return tf.shape(x)
    if tf.is_tensor(noise_shape):
        return noise_shape
    try:
        given = tf.TensorShape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    if x.shape.rank is not None and given.rank == x.shape.rank:
        dims = zip(given.as_list(), x.shape.as_list(), strict=True)
        given = tf.TensorShape([n if n is not None else d for n, d in dims])
    if not given.is_fully_defined():
        raise ValueError(
            f"npu_ops.dropout: noise_shape={noise_shape!r} has unknown dimensions x's static "
            f"shape {x.shape} cannot fill; give every dimension, or a shape tensor"
        )
    if x.shape.is_fully_defined() and given.num_elements() < x.shape.num_elements():
        raise ValueError(
            f"npu_ops.dropout: noise_shape={noise_shape!r} has {given.num_elements()} elements "
            f"but x {x.shape} has {x.shape.num_elements()}; the NPU dropout does not broadcast "
            "the mask: give noise_shape=None (or x's shape)"
        )
    return tf.constant(given.as_list(), tf.int32, name="noise_shape")


def _require_graph(caller: str) -> None:
    if tf.executing_eagerly():
        raise RuntimeError(
            f"npu_ops.{caller} is not compatible with eager execution; build the model in a "
            "graph: `with tf.Graph().as_default():` or tf.compat.v1.disable_eager_execution()"
        )

