"""Batches of a ``tf.data`` pipeline get a static shape: ``drop_remainder=True``."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.model import Severity
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._text import is_true

# method or API -> position of drop_remainder
_METHODS = {"batch": 1, "padded_batch": 3}
_APIS = {
    "tf.data.experimental.map_and_batch": 3,
    "tf.contrib.data.map_and_batch": 3,
}
_DROPPED = "The last partial batch of each epoch is now dropped (the NPU needs static shapes)"


@register
class DatasetBatch(Rule):
    """``Dataset.batch`` / ``padded_batch`` / ``map_and_batch`` get ``drop_remainder=True``.

    The NPU compiles graphs for static shapes, so a batch dimension of ``None`` fails or
    recompiles. Only receivers proven to be a ``tf.data.Dataset`` are changed (a dataset factory,
    a chain of dataset methods, a variable only ever bound to datasets, or a local function that
    returns one); a ``drop_remainder`` already given, by keyword or by position, is respected.
    """

    name: ClassVar[str] = "dataset_batch"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\nds = tf.data.TFRecordDataset(files)\nds = ds.batch(32)\n",
            "import tensorflow as tf\n"
            "ds = tf.data.TFRecordDataset(files)\nds = ds.batch(32, drop_remainder=True)\n",
        ),
        Example(
            "class Batcher:\n    def batch(self, n):\n        return n\nBatcher().batch(3)\n",
            "class Batcher:\n    def batch(self, n):\n        return n\nBatcher().batch(3)\n",
            "a user's own batch() is left alone",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        for method, position in _METHODS.items():
            for mc in ctx.index.method_calls.get(method, ()):
                if ctx.kinds.is_dataset(mc.receiver, mc.scope):
                    self._static(ctx, mc.call, position)
        for ref in ctx.index.calls_to(*_APIS):
            assert ref.call is not None
            self._static(ctx, ref.call, _APIS[ref.name])

    def _static(self, ctx: FileContext, call: ast.Call, position: int) -> None:
        given = ctx.argument(call, position, "drop_remainder")
        if given is not None:
            if not is_true(given):
                ctx.finding(
                    self.name,
                    call,
                    Severity.WARNING,
                    f"drop_remainder={ctx.segment(given)} keeps a partial last batch, "
                    "whose dynamic shape the NPU must recompile for",
                    "use drop_remainder=True unless every sample must be seen",
                )
            return  # fmt: skip
        if any(k.arg is None for k in call.keywords) or any(
            isinstance(a, ast.Starred) for a in call.args
        ):
            return
        if ctx.patch(self.name, call, [ctx.add_keyword(call, "drop_remainder", "True")]):
            ctx.finding(self.name, call, Severity.INFO, _DROPPED,
                        "keep it: static shapes are what the NPU compiles for")  # fmt: skip
