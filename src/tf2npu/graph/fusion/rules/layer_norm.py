"""``layer_norm``: layer normalisation written with TF ops → NPU op ``LayerNorm``.

GE's ``LayerNormFusionPass`` replaces the subgraph by the ``LayerNorm`` kernel, which also returns
the mean and the variance, so the two Mean nodes are superseded by those outputs. One pattern,
with the spellings each library uses as alternatives (Mul and Add operands in either order):

* ``tf.contrib.layers.layer_norm`` (BERT, ALBERT, XLNet) and Keras ``LayerNormalization`` (TF
  2.15's Keras 2 in a TF1 graph): ``tf.nn.moments(keep_dims=True)`` then
  ``tf.nn.batch_normalization`` — ``x * (rsqrt(var + eps) * gamma) + (beta - mean * (...))``;
* written out (tensor2tensor ``layer_norm_compute``, GPT-2 ``norm``, plain TF):
  ``(x - mean) * rsqrt(var + eps) * gamma + beta``, or ``(x - mean) / sqrt(var + eps)``, or
  ``(x - mean) * (rsqrt(var + eps) * gamma)``;
* the variance as ``moments`` writes it (SquaredDifference with the StopGradient mean), as
  ``reduce_mean(squared_difference(x, mean))`` (t2t), or ``reduce_mean(square(x - mean))``
  (GPT-2), ``pow(x - mean, 2)`` or ``d * d``; ``x - mean`` may be one node or two.

Both gamma and beta must be present. The normalised axes must be trailing: ``[-1]`` always
matches; other axes (contrib's and Keras's ``[rank - 1]``) need the rank of ``x``, which
:func:`tf2npu.graph.fusion.shapes.rank_of` reads from the graph.
"""

from __future__ import annotations

from typing import ClassVar

from tf2npu.graph.fusion.attrs import AttrFactory
from tf2npu.graph.fusion.consts import const_values, scalar_value
from tf2npu.graph.fusion.pattern import AnyOf, Const, Match, Op, Var, any_of, dtype_of, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.fusion.rules._common import bool_attr, checked, rank_of
from tf2npu.graph.ir import Graph, Node

_ADD = {"Add", "AddV2"}
_MUL = {"Mul"}


def _pattern() -> AnyOf:
    x, gamma, beta = Var("x"), Var("gamma"), Var("beta")
    mean = Op("mean", {"Mean"}, (x, Const("mean_axes")))
    diff = Op("diff", {"Sub"}, (x, mean))  # x - mean inside the variance
    squared = any_of(
        Op("sq_diff", {"SquaredDifference"}, (x, Op("stop", {"StopGradient"}, (mean,)))),
        Op("sq_diff", {"SquaredDifference"}, (x, mean)),
        Op("sq_diff", {"Square"}, (diff,)),
        Op("sq_diff", {"Pow"}, (diff, Const("two", 2.0))),
        Op("sq_diff", _MUL, (diff, diff)),
    )
    variance = Op("variance", {"Mean"}, (squared, Const("variance_axes")))
    add_eps = Op("add_eps", _ADD, (variance, Const("epsilon")))
    inv = Op("rsqrt", {"Rsqrt"}, (add_eps,))
    # tf.nn.batch_normalization: x * scale + (beta - mean * scale), scale = rsqrt(.) * gamma
    scale = Op("scale", _MUL, (inv, gamma))
    batch_norm = Op("layer_norm", _ADD, (
        Op("x_scaled", _MUL, (x, scale)),
        Op("shift", {"Sub"}, (beta, Op("mean_scaled", _MUL, (mean, scale)))),
    ))
    centred = Op("centred", {"Sub"}, (x, mean))  # x - mean of the output (may be ``diff``)
    normed = any_of(
        Op("normed", _MUL, (centred, inv)),
        Op("normed", {"RealDiv"}, (centred, Op("sqrt", {"Sqrt"}, (add_eps,)))),
    )
    written_out = Op("layer_norm", _ADD, (any_of(
        Op("scaled", _MUL, (normed, gamma)),
        Op("scaled", _MUL, (centred, scale)),
    ), beta))
    return any_of(batch_norm, written_out)


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
