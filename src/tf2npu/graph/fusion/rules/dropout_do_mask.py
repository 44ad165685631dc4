"""``dropout_do_mask``: TF's dropout subgraph → NPU ops ``DropOutGenMask`` + ``DropOutDoMask``.

``tf.nn.dropout`` draws ``RandomUniform`` numbers of x's shape, keeps those ``>= rate`` and
scales the kept elements by ``1 / (1 - rate)``. TF 1.15 writes the last step as
``x * scale * cast(keep_mask)``, TF 2.x as ``where(keep_mask, x * scale, 0)``; both are matched.
On Ascend the pair becomes ``DropOutGenMask`` (a bit mask from the shape and keep probability,
seeds copied from the RandomUniform) and ``DropOutDoMask``; the keep probability ``1 - rate``
is a new Const in x's dtype (GE's ``DropOutDoMaskFusionPass`` is the alias). The noise shape
must be x's own shape: a ``Shape`` of x, or a Const equal to x's static shape.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tf2npu.dtypes import DT_BOOL, DT_INT32
from tf2npu.graph.fusion.attrs import AttrFactory
from tf2npu.graph.fusion.consts import const_values, scalar_like, scalar_value
from tf2npu.graph.fusion.pattern import Const, Match, Op, Var, dtype_of, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode, Prev
from tf2npu.graph.fusion.rules._common import checked, static_shape
from tf2npu.graph.ir import Graph, Node

_TOL = 1e-3


def _patterns() -> tuple[Op, ...]:
    keep = Op(
        "keep_mask",
        {"GreaterEqual"},
        (Op("uniform", {"RandomUniform"}, (Var("shape"),)), Const("rate")),
    )
    scaled = Op("scaled", {"Mul"}, (Var("x"), Const("scale")), commutative=True)
    tf1 = Op("dropout", {"Mul"}, (scaled, Op("cast", {"Cast"}, (keep,))), commutative=True)
    tf2 = Op("dropout", {"SelectV2", "Select"}, (keep, scaled, Const("zero", 0.0)))
    return tf1, tf2


PATTERNS = _patterns()


@register_rule
class DropoutDoMask(FusionRule):
    """TF's dropout subgraph becomes DropOutGenMask + DropOutDoMask."""

    name: ClassVar[str] = "dropout_do_mask"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = ("DropOutDoMaskFusionPass",)
    description: ClassVar[str] = (
        "RandomUniform >= rate, Cast, Mul by 1/(1-rate) (or SelectV2) -> DropOutGenMask + "
        "DropOutDoMask (NPU ops)"
    )
    roots: ClassVar[frozenset[str]] = frozenset({"Mul", "SelectV2", "Select"})

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        dtype = dtype_of(root)
        if dtype is None:
            return None
        for pattern in PATTERNS:
            m = match(graph, root, pattern)
            if m is not None and _valid(graph, m):
                return checked(graph, m, _steps(graph, m, dtype))
        return None


def _valid(graph: Graph, m: Match) -> bool:
    rate = scalar_value(graph[m.tensors["rate"].node])
    scale = scalar_value(graph[m.tensors["scale"].node])
    if rate is None or scale is None or not 0.0 <= rate < 1.0:
        return False
    if abs(scale * (1.0 - rate) - 1.0) > _TOL:
        return False
    cast = m.nodes.get("cast")
    src = cast.attrs.get("SrcT") if cast is not None else None
    if cast is not None and (src is None or src.type != DT_BOOL):
        return False
    return _noise_shape_is_x(graph, m)


def _noise_shape_is_x(graph: Graph, m: Match) -> bool:
    shape = graph.get(m.tensors["shape"].node)
    if shape is None:
        return False
    if shape.op == "Shape":
        return shape.inputs == (m.tensors["x"],)
    static = static_shape(graph, m.tensors["x"])
    values = const_values(shape) if shape.op == "Const" else None
    return static is not None and values is not None and [float(d) for d in static] == values


def _steps(graph: Graph, m: Match, dtype: int) -> list[NewNode]:
    rate_node = graph[m.tensors["rate"].node]
    uniform = m.nodes["uniform"]
    rate = scalar_value(rate_node)
    assert rate is not None  # checked by _valid
    make = AttrFactory([uniform])
    keep_prob: dict[str, Any] = {
        "dtype": make.dtype(dtype),
        "value": scalar_like(rate_node.attrs["value"], 1.0 - rate),
    }
    shape_type = uniform.attrs.get("T")
    gen_attrs = {
        "seed": make.integer(uniform.attrs["seed"].i if "seed" in uniform.attrs else 0),
        "seed2": make.integer(uniform.attrs["seed2"].i if "seed2" in uniform.attrs else 0),
        "Tshape": make.dtype(shape_type.type if shape_type is not None else DT_INT32),
    }
    return [
        NewNode("keep_prob", "Const", (), keep_prob, ("output",)),
        NewNode(
            "dropout_gen_mask",
            "DropOutGenMask",
            (m.tensors["shape"], Prev(0)),
            gen_attrs,
            ("y",),
            npu_dtype=dtype,
        ),
        NewNode(
            "dropout_do_mask",
            "DropOutDoMask",
            (m.tensors["x"], Prev(1), Prev(0)),
            {},
            ("y",),
            npu_dtype=dtype,
        ),
    ]
