"""``gelu_tanh``: the tanh approximation of GELU written with TF ops → NPU op ``Gelu``.

``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``, as each library writes it (GE's
``GeluFusionPass`` replaces it by the ``Gelu`` kernel):

* google-research/bert, ALBERT, XLNet and tensor2tensor ``gelu``: ``cdf = 0.5 * (1.0 +
  tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 3)))); return x * cdf``;
* GPT-2 ``gelu`` and ``tf.nn.gelu(approximate=True)``: ``0.5 * x * (1 + tf.tanh(...))``;
* ``x * 0.5 * (...)``, any operand order of every Mul and Add, ``Add`` or ``AddV2``;
* the cube as ``pow(x, 3)``, ``x * x * x`` (either grouping) or ``square(x) * x``.

The exact GELU (``tf.nn.gelu(approximate=False)``, Keras ``activation="gelu"``:
``0.5 * x * (1 + erf(x / sqrt(2)))``) is deliberately not matched: ``Gelu`` is the tanh
approximation, and replacing one by the other would change the model's numbers. Constants are
compared with a relative tolerance of 1e-3 so float16 graphs (whose constants are rounded)
match too.

In a training graph (``tf.gradients``, an optimizer's ``minimize``) the gradient ops TF built
for the pattern become one ``GeluGrad(dy, x, y)``, as GE has it (the adapter's ``Gelu``
gradient): :mod:`tf2npu.graph.fusion.gradient` finds them, and their sum into ``x``'s gradient
now reads ``GeluGrad``'s output.
"""

from __future__ import annotations

import math
from typing import ClassVar

from tf2npu.graph.fusion.gradient import find_gradient
from tf2npu.graph.fusion.pattern import AnyOf, Const, Op, Var, any_of, dtype_of, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode, Prev
from tf2npu.graph.fusion.rules._common import checked
from tf2npu.graph.ir import Graph, Node

_MUL = {"Mul"}
_ADD = {"Add", "AddV2"}
_TOL = 1e-3


def _const(label: str, value: float) -> Const:
    return Const(label, value, _TOL)


def _pattern() -> AnyOf:
    """One pattern; Mul and Add operands match in either order (``pattern.COMMUTATIVE``)."""
    x = Var("x")
    cube = any_of(
        Op("pow", {"Pow"}, (x, _const("three", 3.0))),
        Op("cube", _MUL, (any_of(Op("square", _MUL, (x, x)), Op("square", {"Square"}, (x,))), x)),
    )
    inner = Op("inner", _ADD, (x, Op("cubic", _MUL, (_const("a", 0.044715), cube))))
    scaled = Op("scaled", _MUL, (_const("c", math.sqrt(2.0 / math.pi)), inner))
    one_plus = Op("one_plus", _ADD, (_const("one", 1.0), Op("tanh", {"Tanh"}, (scaled,))))
    half = _const("half", 0.5)
    return any_of(
        # x * (0.5 * (1 + t)): BERT, ALBERT, XLNet, tensor2tensor
        Op("gelu", _MUL, (x, Op("cdf", _MUL, (half, one_plus)))),
        # (0.5 * x) * (1 + t) or (x * 0.5) * (1 + t): GPT-2, tf.nn.gelu(approximate=True)
        Op("gelu", _MUL, (Op("half_x", _MUL, (half, x)), one_plus)),
        # 0.5 * (x * (1 + t))
        Op("gelu", _MUL, (half, Op("x_cdf", _MUL, (x, one_plus)))),
    )


PATTERN = _pattern()


@register_rule
class GeluTanh(FusionRule):
    """A hand-written tanh GELU (BERT, GPT-2, tf.nn.gelu(approximate=True)) becomes ``Gelu``."""

    name: ClassVar[str] = "gelu_tanh"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = ("GeluFusionPass",)
    description: ClassVar[str] = (
        "x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) -> Gelu (NPU op)"
    )
    roots: ClassVar[frozenset[str]] = frozenset({"Mul"})

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        dtype = dtype_of(root)
        if dtype is None:
            return None
        m = match(graph, root, PATTERN)
        if m is None:
            return None
        x = m.tensors["x"]
        step = NewNode("gelu", "Gelu", (x,), {}, ("y",), npu_dtype=dtype)
        region = find_gradient(graph, m, {"x": x})
        if isinstance(region, str):
            return None
        if region is None:
            return checked(graph, m, [step])
        grad = NewNode("gelu_grad", "GeluGrad", (region.dy, x, Prev(0)), {}, ("z",), dtype)
        part = region.part([grad], 1, {"x": Prev(1)})
        return checked(graph, m, [step], gradient=part)
