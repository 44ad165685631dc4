"""GELU implementations become the NPU's fused ``Gelu`` op."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.model import Severity
from tf2npu.migrate.rule import Example, Rule, register

_TANH = frozenset({"tf.tanh", "tf.math.tanh", "tf.nn.tanh", "tf.keras.activations.tanh"})
_ERF = frozenset({"tf.erf", "tf.math.erf", "tf.math.erfc", "tf.erfc"})
_TANH_COEFF = 0.044715
_ERF_NOTE = (
    "exact (erf) GELU replaced by the NPU's tanh approximation; outputs differ by up to about "
    "1e-3 (relative to x), which training tolerates"
)


@register
class Gelu(Rule):
    """GELU functions and ops become ``npu_unary_ops.gelu`` (the NPU's fused Gelu).

    A ``def gelu...(x)`` whose body computes the tanh formula (``0.5 * x * (1 + tanh(sqrt(2/pi) *
    (x + 0.044715 * x**3)))``) or the erf formula keeps its signature and docstring and returns
    ``npu_unary_ops.gelu(<its own parameter>)``. ``tf.nn.gelu(x)`` and Keras
    ``activation="gelu"`` are rewritten too. A function named gelu whose body is neither formula
    is reported, not replaced. Replacing the erf form is reported, since the NPU op is the tanh
    approximation.
    """

    name: ClassVar[str] = "gelu"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import numpy as np\nimport tensorflow as tf\n\n\ndef gelu(input_tensor):\n"
            '    """Gaussian Error Linear Unit."""\n'
            "    cdf = 0.5 * (1.0 + tf.tanh(\n"
            "        (np.sqrt(2 / np.pi) * (input_tensor + 0.044715 * tf.pow(input_tensor, 3)))))\n"
            "    return input_tensor * cdf\n",
            "from npu_bridge.npu_init import *\nimport numpy as np\nimport tensorflow as tf\n\n\n"
            "def gelu(input_tensor):\n"
            '    """Gaussian Error Linear Unit."""\n'
            "    return npu_unary_ops.gelu(input_tensor)\n",
            "BERT's gelu",
        ),
        Example(
            'import tensorflow as tf\nlayer = tf.keras.layers.Dense(64, activation="gelu")\n',
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "layer = tf.keras.layers.Dense(64, activation=npu_unary_ops.gelu)\n",
            "a Keras activation",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        for func in ctx.index.functions:
            if "gelu" in func.name.lower():
                self._function(ctx, func)
        for ref in ctx.index.calls_to("tf.nn.gelu", "tf.keras.activations.gelu"):
            assert ref.call is not None
            self._op(ctx, ref.call)
        for ref in ctx.index.refs:
            if ref.call is not None and ref.name.startswith("tf.keras.layers."):
                self._activation(ctx, ref.call)

    def _function(self, ctx: FileContext, func: ast.FunctionDef) -> None:
        params = [*func.args.posonlyargs, *func.args.args]
        if self._already(func) or not params:
            return
        form = _formula(ctx, func)
        if form is None:
            ctx.finding(
                self.name,
                func,
                Severity.INFO,
                f"{func.name}() does not compute a GELU formula tf2npu recognises; kept",
                "if it is a GELU, return npu_unary_ops.gelu(x) for the fused NPU op",
            )
            return  # fmt: skip
        body = func.body
        first = 1 if _is_docstring(body[0]) and len(body) > 1 else 0
        call = f"return npu_unary_ops.gelu({params[0].arg})"
        start, _ = ctx.span(body[first])
        _, end = ctx.span(body[-1])
        if ctx.owns_lines(body[first]) and ctx.owns_lines(body[-1]):
            assert body[-1].end_lineno is not None
            indent = ctx.source.indent_of(body[first].lineno)
            edit = Edit(ctx.source.line_start(body[first].lineno),
                        ctx.source.line_end(body[-1].end_lineno),
                        f"{indent}{call}{ctx.source.newline}")  # fmt: skip
        else:
            edit = Edit(start, end, call)
        if ctx.patch(self.name, func, [edit]):
            ctx.need_import()
            if form == "erf":
                ctx.finding(self.name, func, Severity.WARNING, _ERF_NOTE)

    @staticmethod
    def _already(func: ast.FunctionDef) -> bool:
        for node in ast.walk(func):
            if isinstance(node, ast.Attribute) and node.attr == "gelu":
                if isinstance(node.value, ast.Name) and node.value.id == "npu_unary_ops":
                    return True
        return False

    def _op(self, ctx: FileContext, call: ast.Call) -> None:
        approximate = ctx.argument(call, 1, "approximate")
        keep = [a for a in ctx.arguments(call) if not (
            isinstance(a, ast.keyword) and a.arg in ("approximate", "name"))]  # fmt: skip
        if len(keep) != 1 or isinstance(keep[0], (ast.keyword, ast.Starred)):
            return
        edits = [ctx.replace(call, f"npu_unary_ops.gelu({ctx.segment(keep[0])})")]
        if ctx.patch(self.name, call, edits):
            ctx.need_import()
            exact = not (isinstance(approximate, ast.Constant) and approximate.value is True)
            if exact:
                ctx.finding(self.name, call, Severity.WARNING, _ERF_NOTE)

    def _activation(self, ctx: FileContext, call: ast.Call) -> None:
        kw = ctx.keyword(call, "activation")
        if kw is not None and isinstance(kw.value, ast.Constant) and kw.value.value == "gelu":
            if ctx.patch(self.name, kw, [ctx.replace(kw.value, "npu_unary_ops.gelu")]):
                ctx.need_import()
                ctx.finding(self.name, kw, Severity.WARNING, _ERF_NOTE)


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _formula(ctx: FileContext, func: ast.FunctionDef) -> str | None:
    """``tanh`` or ``erf`` when the body computes that GELU form, else None."""
    names: set[str] = set()
    numbers: list[float] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            name = ctx.index.callee(node)
            if name is not None:
                names.add(name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, float):
            numbers.append(node.value)
    if names & _TANH and any(abs(v - _TANH_COEFF) < 1e-9 for v in numbers):
        return "tanh"
    if names & _ERF:
        return "erf"
    return None
