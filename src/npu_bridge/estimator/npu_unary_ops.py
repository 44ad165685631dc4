"""``npu_unary_ops``: the NPU op library object scripts call ``gelu`` on.

In the real adapter the module attribute ``npu_unary_ops`` is the whole loaded op library (the
generated wrapper of every custom op), and scripts write::

    from npu_bridge.estimator.npu_unary_ops import npu_unary_ops
    y = npu_unary_ops.gelu(x)

Here ``npu_unary_ops`` is an :class:`NpuOpLibrary` holding the wrappers of the NPU ops tf2npu
implements (:mod:`tf2npu.graph.npu_ops`): ``gelu``, ``gelu_grad``, ``drop_out_gen_mask`` and
``drop_out_do_mask``, with the generated wrappers' argument names. Each adds one node that a
stock TensorFlow session runs and tf2npu's graph engine reads as the NPU op
(:mod:`tf2npu.client.ops`). ``Gelu``'s gradient is ``GeluGrad(grad, x, y)``, as the
real module registers. Asking for another op of the real library raises an ``AttributeError``
that lists the ones provided.

Example:
    >>> import tensorflow as tf
    >>> with tf.Graph().as_default():
    ...     y = npu_unary_ops.gelu(tf.constant([1.0]))
    ...     with tf.compat.v1.Session() as sess:
    ...         print(sess.run(y).round(4))
    [0.8412]
"""

from __future__ import annotations

from typing import Any

from tf2npu.client.ops import emit

__all__ = ["NpuOpLibrary", "npu_unary_ops"]


class NpuOpLibrary:
    """The NPU ops available to scripts, as methods named like TF's generated op wrappers."""

    def gelu(self, features: Any, name: str | None = None) -> Any:
        """``Gelu``: ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`` (float32 or float16)."""
        return _like(emit("Gelu", [features], name=name)[0], features)

    def gelu_grad(self, gradients: Any, features: Any, output: Any, name: str | None = None) -> Any:
        """``GeluGrad``: the gradient of ``gelu`` at ``features`` (``output`` is gelu's result)."""
        return _like(emit("GeluGrad", [gradients, features, output], name=name)[0], features)

    def drop_out_gen_mask(
        self, shape: Any, prob: Any, seed: int = 0, seed2: int = 0, name: str | None = None
    ) -> Any:
        """``DropOutGenMask``: a random keep-mask, one bit per element (see ``npu_ops.dropout``)."""
        return emit("DropOutGenMask", [shape, prob], {"seed": seed, "seed2": seed2}, name)[0]

    def drop_out_do_mask(self, x: Any, mask: Any, keep_prob: Any, name: str | None = None) -> Any:
        """``DropOutDoMask``: ``x · bit / keep_prob`` with the bits of a ``drop_out_gen_mask``."""
        return _like(emit("DropOutDoMask", [x, mask, keep_prob], name=name)[0], x)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and friends probe dunders: plain "no"
            raise AttributeError(attr)
        provided = ", ".join(sorted(n for n in dir(type(self)) if not n.startswith("_")))
        raise AttributeError(
            f"npu_unary_ops.{attr}: tf2npu does not provide this op of the Ascend op library; "
            f"it provides: {provided}. Replace the call with TensorFlow ops"
        )


def _like(output: Any, like: Any) -> Any:
    """``output`` with the static shape of ``like``, as the device op's shape function gives it.

    The call node's shape comes from inferring the CPU body, which loses even the rank when an
    input such as a ``keep_prob`` placeholder has an unknown shape; the op's output always has
    the shape of its element-wise input.
    """
    shape = getattr(like, "shape", None)
    if shape is not None and hasattr(shape, "rank"):
        output.set_shape(shape)
    return output


npu_unary_ops = NpuOpLibrary()
"""The op library (the real module's ``npu_unary_ops = helper.get_gen_ops()``)."""
