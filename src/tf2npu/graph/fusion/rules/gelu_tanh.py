"""``gelu_tanh``: the tanh approximation of GELU written with TF ops → NPU op ``Gelu``.

google-research/bert's ``modeling.gelu`` computes
``x * 0.5 * (1.0 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3))))``; GE's ``GeluFusionPass``
replaces that subgraph by the ``Gelu`` kernel. We match it with ``pow(x, 3)`` or ``x * x * x``,
either grouping of the outer product (``x * (0.5 * (1 + t))`` or ``(0.5 * x) * (1 + t)``) and any
operand order. Constants are compared with a relative tolerance of 1e-3 so float16 graphs
(whose constants are rounded) match too.
"""

from __future__ import annotations

import math
from typing import ClassVar

from tf2npu.graph.fusion.pattern import Const, Op, Pattern, Var, dtype_of, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.fusion.rules._common import checked
from tf2npu.graph.ir import Graph, Node

_MUL = {"Mul"}
_ADD = {"Add", "AddV2"}
_TOL = 1e-3


def _const(label: str, value: float) -> Const:
    return Const(label, value, _TOL)


def _patterns() -> tuple[Op, ...]:
    x = Var("x")
    cubes: tuple[Pattern, ...] = (
        Op("pow", {"Pow"}, (x, _const("three", 3.0))),
        Op("cube", _MUL, (Op("square", _MUL, (x, x)), x), commutative=True),
    )
    found = []
    for cube in cubes:
        inner = Op("inner", _ADD, (x, Op("cubic", _MUL, (_const("a", 0.044715), cube),
                                         commutative=True)), commutative=True)
        scaled = Op("scaled", _MUL, (_const("c", math.sqrt(2.0 / math.pi)), inner),
                    commutative=True)
        one_plus = Op("one_plus", _ADD, (_const("one", 1.0), Op("tanh", {"Tanh"}, (scaled,))),
                      commutative=True)
        half = _const("half", 0.5)
        found.append(Op("gelu", _MUL, (x, Op("cdf", _MUL, (half, one_plus), commutative=True)),
                        commutative=True))
        found.append(Op("gelu", _MUL, (Op("half_x", _MUL, (half, x), commutative=True),
                                       one_plus), commutative=True))
    return tuple(found)


PATTERNS = _patterns()


@register_rule
class GeluTanh(FusionRule):
    """BERT's hand-written tanh GELU becomes one ``Gelu`` NPU op."""

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
        for pattern in PATTERNS:
            m = match(graph, root, pattern)
            if m is not None:
                step = NewNode("gelu", "Gelu", (m.tensors["x"],), {}, ("y",), npu_dtype=dtype)
                return checked(graph, m, [step])
        return None
