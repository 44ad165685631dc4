"""``tf.nn.dropout`` becomes the NPU dropout, with TF1 keep-probability semantics."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.model import Severity
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._text import as_operand, is_none

_KERAS_DROPOUT = (
    "tf.layers.dropout",
    "tf.layers.Dropout",
    "tf.keras.layers.Dropout",
    "tf.keras.layers.SpatialDropout1D",
    "tf.keras.layers.SpatialDropout2D",
    "tf.keras.layers.SpatialDropout3D",
)
CONVERT_DROPOUT_IMPORT = "from npu_bridge.estimator.npu import npu_convert_dropout"


@register
class Dropout(Rule):
    """``tf.nn.dropout`` becomes ``npu_ops.dropout`` (the NPU's fused dropout).

    ``npu_ops.dropout(x, keep_prob, noise_shape=None, seed=None, name=None)`` takes the
    probability to *keep*, as TF 1.x did: a positional TF1 ``keep_prob`` is kept as it is, and
    ``rate=r`` becomes ``keep_prob=1 - r`` (parenthesised when ``r`` is an expression). ``seed``
    and ``name`` are kept. A call with ``noise_shape`` is left alone and reported, since the NPU
    dropout draws one mask element per input element. Keras and ``tf.layers`` dropout layers get
    the ``npu_convert_dropout`` import, which switches them to the NPU dropout.
    """

    name: ClassVar[str] = "dropout"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\nh = tf.nn.dropout(h, rate=a + b)\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "h = npu_ops.dropout(h, keep_prob=1 - (a + b))\n",
            "rate becomes keep_prob",
        ),
        Example(
            "import tensorflow as tf\nh = tf.nn.dropout(h, 0.9, seed=1)\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "h = npu_ops.dropout(h, 0.9, seed=1)\n",
            "a positional TF1 keep_prob is kept",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to("tf.nn.dropout"):
            assert ref.call is not None
            self._rewrite(ctx, ref.call, ref.node)
        if ctx.index.calls_to(*_KERAS_DROPOUT):
            ctx.need_import(CONVERT_DROPOUT_IMPORT)

    def _rewrite(self, ctx: FileContext, call: ast.Call, callee: ast.expr) -> None:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            ctx.finding(self.name, call, Severity.WARNING,
                        "tf.nn.dropout called with *args/**kwargs: not rewritten",
                        "call npu_ops.dropout(x, keep_prob=...) explicitly")  # fmt: skip
            return
        noise_shape = ctx.argument(call, 2, "noise_shape")
        if noise_shape is not None and not is_none(noise_shape):
            ctx.finding(
                self.name,
                call,
                Severity.INFO,
                "tf.nn.dropout with noise_shape kept: npu_ops.dropout draws one mask "
                "element per input element",
                "drop noise_shape to use the faster NPU dropout, if that is acceptable",
            )
            return  # fmt: skip
        keep = ctx.argument(call, 1, "keep_prob")
        rate = ctx.keyword(call, "rate")
        if keep is not None and rate is not None:
            ctx.finding(
                self.name,
                call,
                Severity.ERROR,
                "tf.nn.dropout given both keep_prob and rate",
                "pass only one of them",
            )
            return  # fmt: skip
        if keep is None and rate is None:
            ctx.finding(
                self.name,
                call,
                Severity.ERROR,
                "tf.nn.dropout without keep_prob or rate",
                "pass keep_prob (TF1) or rate",
            )
            return  # fmt: skip
        edits = [ctx.replace(callee, "npu_ops.dropout")]
        if rate is not None:
            operand = as_operand(rate.value, ctx.segment(rate.value))
            edits.append(ctx.replace(rate, f"keep_prob=1 - {operand}"))
        if ctx.patch(self.name, call, edits):
            ctx.need_import()
