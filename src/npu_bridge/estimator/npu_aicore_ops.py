"""``npu_aicore_ops``: FastGelu and the byte-mask dropout ``dropout_v3``.

The real module binds the whole generated op library as ``npu_aicore_ops`` and adds Python
helpers; scripts use both::

    from npu_bridge.estimator.npu_aicore_ops import npu_aicore_ops
    y = npu_aicore_ops.fast_gelu(x)                      # the op wrapper
    from npu_bridge.estimator import npu_aicore_ops
    y = npu_aicore_ops.dropout_v3(x, keep_prob=0.9)      # the helper

Here ``npu_aicore_ops.npu_aicore_ops`` is an :class:`NpuAicoreOpLibrary` holding the wrappers
of the NPU ops tf2npu implements (:mod:`tf2npu.graph.npu_ops`): ``fast_gelu``,
``fast_gelu_grad``, ``drop_out_gen_mask_v3`` and ``drop_out_do_mask_v3``, with the generated
wrappers' argument names. Each adds one node a stock session runs and the graph engine reads
as the NPU op. ``FastGelu``'s gradient is ``FastGeluGrad(dy, x)``, as the real module
registers; ``DropOutDoMaskV3``'s is the same mask applied to the gradient.

Example:
    >>> import tensorflow as tf
    >>> with tf.Graph().as_default():
    ...     y = npu_aicore_ops.fast_gelu(tf.constant([1.0, -1.0]))
    ...     with tf.compat.v1.Session() as sess:
    ...         print(sess.run(y).round(4))
    [ 0.8458 -0.1542]
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from npu_bridge.estimator.npu_ops import _two_op_dropout
from npu_bridge.estimator.npu_unary_ops import _like
from tf2npu.client.ops import emit

__all__ = ["NpuAicoreOpLibrary", "dropout_v3", "npu_aicore_ops"]


class NpuAicoreOpLibrary:
    """The AI-Core op wrappers scripts call, named like TF's generated op wrappers."""

    def fast_gelu(self, features: Any, name: str | None = None) -> Any:
        """``FastGelu``: ``x / (1 + exp(-1.702|x|)) · exp(0.851(x − |x|))`` = x·σ(1.702x)."""
        return _like(emit("FastGelu", [features], name=name)[0], features)

    def fast_gelu_grad(self, gradients: Any, features: Any, name: str | None = None) -> Any:
        """``FastGeluGrad``: the gradient of ``fast_gelu`` at ``features``."""
        return _like(emit("FastGeluGrad", [gradients, features], name=name)[0], features)

    def drop_out_gen_mask_v3(
        self, shape: Any, prob: Any, seed: int = 0, seed2: int = 0, name: str | None = None
    ) -> Any:
        """``DropOutGenMaskV3``: a random keep-mask, one uint8 (0/1) per element."""
        return emit("DropOutGenMaskV3", [shape, prob], {"seed": seed, "seed2": seed2}, name)[0]

    def drop_out_do_mask_v3(
        self, x: Any, mask: Any, keep_prob: Any, name: str | None = None
    ) -> Any:
        """``DropOutDoMaskV3``: ``x · mask / keep_prob`` with a ``drop_out_gen_mask_v3`` mask."""
        return _like(emit("DropOutDoMaskV3", [x, mask, keep_prob], name=name)[0], x)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        provided = ", ".join(sorted(n for n in dir(type(self)) if not n.startswith("_")))
        raise AttributeError(
            f"npu_aicore_ops.{attr}: tf2npu does not provide this op of the Ascend op "
            f"library; it provides: {provided}. Replace the call with TensorFlow ops"
        )


npu_aicore_ops = NpuAicoreOpLibrary()
"""The op library (the real module's ``npu_aicore_ops = helper.get_gen_ops()``)."""


def dropout_v3(
    x: Any,
    keep_prob: Any,
    noise_shape: Any = None,
    seed: int | None = None,
    name: str | None = None,
) -> Any:
    """Dropout with the V3 ops: each element kept with probability ``keep_prob``.

    Kept elements are scaled by ``1 / keep_prob``, dropped ones are 0; a Python
    ``keep_prob`` of 1.0 returns ``x`` itself, as the real helper does.

    Raises:
        RuntimeError: eager execution is on.
        ValueError: ``x`` is not floating point; a Python ``keep_prob`` is outside (0, 1].
    """
    if tf.executing_eagerly():
        raise RuntimeError(
            "npu_aicore_ops.dropout_v3 is not compatible with eager execution; build the "
            "model in a graph (`with tf.Graph().as_default():`)"
        )
    gen, do = npu_aicore_ops.drop_out_gen_mask_v3, npu_aicore_ops.drop_out_do_mask_v3
    return _two_op_dropout("npu_aicore_ops.dropout_v3", gen, do, x, keep_prob, noise_shape, seed,
                          name)  # fmt: skip
