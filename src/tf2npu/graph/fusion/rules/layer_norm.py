"""``layer_norm``: the moments + batch-normalization form of layer norm → NPU op ``LayerNorm``.

``tf.contrib.layers.layer_norm`` (what BERT calls) computes ``tf.nn.moments`` over the trailing
axes with ``keep_dims=True`` and then ``tf.nn.batch_normalization``; GE's
``LayerNormFusionPass`` replaces the resulting subgraph (Mean, StopGradient, SquaredDifference,
Mean, Add epsilon, Rsqrt, Mul gamma, Mul, Mul, Sub beta, Add) by the ``LayerNorm`` kernel, which
also returns the mean and the variance — so the two Mean nodes are superseded by those outputs.
Both gamma and beta must be present. The normalised axes must be trailing: ``[-1]`` always
matches; other axes need the rank of ``x`` known to the graph.
"""

from __future__ import annotations

from typing import ClassVar

from tf2npu.graph.fusion.attrs import AttrFactory
from tf2npu.graph.fusion.consts import const_values, scalar_value
from tf2npu.graph.fusion.pattern import Const, Match, Op, Var, dtype_of, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.fusion.rules._common import bool_attr, checked, rank_of
from tf2npu.graph.ir import Graph, Node

_ADD = {"Add", "AddV2"}


def _pattern() -> Op:
    x = Var("x")
    mean = Op("mean", {"Mean"}, (x, Const("mean_axes")))
    centred = Op("sq_diff", {"SquaredDifference"}, (x, Op("stop", {"StopGradient"}, (mean,))))
    variance = Op("variance", {"Mean"}, (centred, Const("variance_axes")))
    inv = Op("rsqrt", {"Rsqrt"}, (Op("add_eps", _ADD, (variance, Const("epsilon")),
                                     commutative=True),))
    scale = Op("scale", {"Mul"}, (inv, Var("gamma")), commutative=True)
    shift = Op("shift", {"Sub"}, (Var("beta"), Op("mean_scaled", {"Mul"}, (mean, scale),
                                                  commutative=True)))
    scaled_x = Op("x_scaled", {"Mul"}, (x, scale), commutative=True)
    return Op("layer_norm", _ADD, (scaled_x, shift), commutative=True)


PATTERN = _pattern()


@register_rule
class LayerNorm(FusionRule):
    """The moments/batch-normalization layer norm becomes one ``LayerNorm`` NPU op."""

    name: ClassVar[str] = "layer_norm"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = ("LayerNormFusionPass",)
    description: ClassVar[str] = (
        "Mean, SquaredDifference, Mean, Add eps, Rsqrt, Mul gamma, Mul, Mul, Sub beta, Add "
        "-> LayerNorm (NPU op; y, mean, variance)"
    )
    roots: ClassVar[frozenset[str]] = frozenset(_ADD)

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        dtype = dtype_of(root)
        m = match(graph, root, PATTERN) if dtype is not None else None
        if m is None or dtype is None:
            return None
        begin = _begin_norm_axis(graph, m)
        epsilon = scalar_value(graph[m.tensors["epsilon"].node])
        if begin is None or epsilon is None:
            return None
        make = AttrFactory([root])
        attrs = {
            "begin_norm_axis": make.integer(begin),
            "begin_params_axis": make.integer(begin),
            "epsilon": make.real(epsilon),
        }
        inputs = (m.tensors["x"], m.tensors["gamma"], m.tensors["beta"])
        step = NewNode("layer_norm", "LayerNorm", inputs, attrs, ("y", "mean", "variance"),
                       npu_dtype=dtype)
        carried = {m.nodes["mean"].name: {0: 1}, m.nodes["variance"].name: {0: 2}}
        return checked(graph, m, [step], interior_outputs=carried)


def _begin_norm_axis(graph: Graph, m: Match) -> int | None:
    """The first normalised axis if both Means reduce the same trailing axes, keeping dims."""
    if not all(bool_attr(m.nodes[k], "keep_dims", False) for k in ("mean", "variance")):
        return None
    axes = const_values(graph[m.tensors["mean_axes"].node])
    if axes is None or not axes or axes != const_values(graph[m.tensors["variance_axes"].node]):
        return None
    if axes == [-1.0]:
        return -1
    rank = rank_of(graph, m.tensors["x"])
    if rank is None:
        return None
    normalised = sorted(int(a) % rank for a in axes)
    if normalised != list(range(normalised[0], rank)):
        return None
    return normalised[0]
