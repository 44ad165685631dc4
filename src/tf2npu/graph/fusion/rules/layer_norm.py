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

Both gamma and beta must be present and, where their shapes are known, span exactly the
normalised axes (``* 2.0 + 0.5`` with scalars is not a LayerNorm). The normalised axes must be
trailing: ``[-1]`` always matches; other axes (contrib's and Keras's ``[rank - 1]``) need the
rank of ``x``, which :func:`tf2npu.graph.fusion.shapes.rank_of` reads from the graph.

In a training graph the gradient ops TF built for the pattern (found by
:mod:`tf2npu.graph.fusion.gradient`) become one ``LayerNormGrad(dy, x, variance, mean, gamma)``
reading the fused op's statistics and the forward's epsilon (the device kernel's is a fixed
1e-12: see :mod:`tf2npu.graph.npu_ops.layer_norm`), as the adapter's ``LayerNorm`` gradient is
on the device (GE's ``LayerNormGradFusionPass`` then splits it into ``LayerNormXBackprop`` and
``LayerNormBetaGammaBackprop``); its ``pd_x``, ``pd_gamma`` and ``pd_beta`` replace the
gradients of ``x``, ``gamma`` and ``beta`` the pattern contributed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tf2npu.graph.fusion.attrs import AttrFactory
from tf2npu.graph.fusion.consts import const_values, scalar_value
from tf2npu.graph.fusion.gradient import find_gradient
from tf2npu.graph.fusion.pattern import AnyOf, Const, Match, Op, Var, any_of, dtype_of, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode, Prev
from tf2npu.graph.fusion.rules._common import (
    bool_attr,
    checked,
    rank_of,
    static_shape,
    string_attr,
)
from tf2npu.graph.ir import Graph, Node, TensorRef

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
    batch_norm = Op(
        "layer_norm",
        _ADD,
        (
            Op("x_scaled", _MUL, (x, scale)),
            Op("shift", {"Sub"}, (beta, Op("mean_scaled", _MUL, (mean, scale)))),
        ),
    )
    centred = Op("centred", {"Sub"}, (x, mean))  # x - mean of the output (may be ``diff``)
    normed = any_of(
        Op("normed", _MUL, (centred, inv)),
        Op("normed", {"RealDiv"}, (centred, Op("sqrt", {"Sqrt"}, (add_eps,)))),
    )
    written_out = Op(
        "layer_norm",
        _ADD,
        (
            any_of(
                Op("scaled", _MUL, (normed, gamma)),
                Op("scaled", _MUL, (centred, scale)),
            ),
            beta,
        ),
    )
    return any_of(batch_norm, written_out)


PATTERN = _pattern()


def _keras_fused_pattern() -> Op:
    """Keras ``LayerNormalization`` with ``epsilon >= 1.001e-5`` (TF 2.15's Keras 2): ``x``
    reshaped to ``[1, rows, cols, 1]``, ``FusedBatchNormV3`` (NCHW, training, unit scale, zero
    offset), reshaped back to ``shape(x)``, then ``* gamma + beta``."""
    flat = Op("flat", {"Reshape"}, (Var("x"), Var("flat_shape")))
    norm = Op("fused_bn", _FUSED_BN, (flat, Var("ones"), Var("zeros"), Var("m0"), Var("v0")))
    back = Op("unflat", {"Reshape"}, (norm, Var("x_shape")))
    return Op("layer_norm", _ADD, (Op("scaled", _MUL, (back, Var("gamma"))), Var("beta")))


_FUSED_BN = {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}
KERAS_FUSED = _keras_fused_pattern()


@register_rule
class LayerNorm(FusionRule):
    """A layer norm written with TF ops (moments, written out, or Keras's fused batch norm)
    becomes one ``LayerNorm`` NPU op."""

    name: ClassVar[str] = "layer_norm"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = ("LayerNormFusionPass",)
    description: ClassVar[str] = (
        "(x - mean) * rsqrt(variance + eps) * gamma + beta, as tf.nn.moments + "
        "batch_normalization, written out, or Keras's FusedBatchNormV3 form "
        "-> LayerNorm (NPU op; y, mean, variance)"
    )
    roots: ClassVar[frozenset[str]] = frozenset(_ADD)

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        dtype = dtype_of(root)
        if dtype is None:
            return None
        m = match(graph, root, PATTERN)
        if m is not None:
            begin = _begin_norm_axis(graph, m)
            epsilon = scalar_value(graph[m.tensors["epsilon"].node])
            carried = {m.nodes["mean"].name: {0: 1}, m.nodes["variance"].name: {0: 2}}
            return _fusion(graph, m, dtype, begin, epsilon, carried)
        m = match(graph, root, KERAS_FUSED)
        if m is None:
            return None
        begin, epsilon = _keras_fused(graph, m)
        return _fusion(graph, m, dtype, begin, epsilon, {})


def _fusion(
    graph: Graph,
    m: Match,
    dtype: int,
    begin: int | None,
    epsilon: float | None,
    carried: dict[str, dict[int, int]],
) -> Fusion | None:
    if begin is None or epsilon is None or not _params_fit(graph, m, begin):
        return None
    make = AttrFactory([m.root])
    attrs = {
        "begin_norm_axis": make.integer(begin),
        "begin_params_axis": make.integer(begin),
        "epsilon": make.real(epsilon),
    }
    x, gamma, beta = m.tensors["x"], m.tensors["gamma"], m.tensors["beta"]
    step = NewNode(
        "layer_norm", "LayerNorm", (x, gamma, beta), attrs, ("y", "mean", "variance"), dtype
    )
    region = find_gradient(graph, m, {"x": x, "gamma": gamma, "beta": beta}, carried)
    if isinstance(region, str):
        return None
    if region is None:
        return checked(graph, m, [step], interior_outputs=carried)
    grad = NewNode(
        "layer_norm_grad",
        "LayerNormGrad",
        (region.dy, x, Prev(0, 2), Prev(0, 1), gamma),
        {"epsilon": attrs["epsilon"]},
        ("pd_x", "pd_gamma", "pd_beta"),
        dtype,
    )
    grads = {"x": Prev(1, 0), "gamma": Prev(1, 1), "beta": Prev(1, 2)}
    part = region.part([grad], 1, grads)
    return checked(graph, m, [step], interior_outputs=carried, gradient=part)


def _params_fit(graph: Graph, m: Match, begin: int) -> bool:
    """gamma and beta, where their shapes are known, span exactly the normalised axes (the
    kernel takes them as ``shape(x)[begin_params_axis:]``; a scalar gamma is another op)."""
    rank = rank_of(graph, m.tensors["x"])
    axes = -begin if begin < 0 else (rank - begin if rank is not None else None)
    for label in ("gamma", "beta"):
        shape = static_shape(graph, m.tensors[label])
        if shape is not None and (axes is None or len(shape) != axes):
            return False
    return True


def _keras_fused(graph: Graph, m: Match) -> tuple[int | None, float | None]:
    """``(begin_norm_axis, epsilon)`` of Keras's fused-batch-norm layer norm, or ``None``s.

    Checks what makes the batch norm a layer norm: statistics per row of ``[1, rows, cols, 1]``
    (NCHW, ``is_training``), unit scale and zero offset, ``rows`` the product of ``x``'s
    leading axes and ``cols`` of the rest from axis ``k`` on, and the result reshaped to
    ``shape(x)``.
    """
    bn = m.nodes["fused_bn"]
    x = m.tensors["x"]
    if not bool_attr(bn, "is_training", True) or string_attr(bn, "data_format", "NHWC") != "NCHW":
        return None, None
    if not (
        _is_shape_of(graph, m.tensors["x_shape"], x)
        and _filled_with(graph, m.tensors["ones"], 1.0)
        and _filled_with(graph, m.tensors["zeros"], 0.0)
    ):
        return None, None
    return _split_axis(graph, m.tensors["flat_shape"], x), float(bn.attrs["epsilon"].f)


def _is_shape_of(graph: Graph, ref: TensorRef, x: TensorRef) -> bool:
    node = graph.get(ref.node)
    return node is not None and node.op == "Shape" and list(node.inputs) == [x] and ref.index == 0


def _filled_with(graph: Graph, ref: TensorRef, value: float) -> bool:
    """A tensor of ``value`` everywhere: ``Fill(dims, value)`` or a Const of that value."""
    node = graph.get(ref.node)
    if node is not None and node.op == "Fill" and len(node.inputs) == 2:
        node = graph.get(node.inputs[1].node)
    values = const_values(node) if node is not None else None
    return bool(values) and all(v == value for v in values or ())


def _split_axis(graph: Graph, ref: TensorRef, x: TensorRef) -> int | None:
    """``k`` when ``ref`` is ``[1, prod(shape(x)[:k]), prod(shape(x)[k:]), 1]``."""
    pack = graph.get(ref.node)
    if pack is None or pack.op != "Pack" or len(pack.inputs) != 4:
        return None
    ends = [graph.get(pack.inputs[i].node) for i in (0, 3)]
    if any(n is None or scalar_value(n) != 1.0 for n in ends):
        return None
    rows = _prod_of_slice(graph, pack.inputs[1], x)
    cols = _prod_of_slice(graph, pack.inputs[2], x)
    if rows is None or cols is None or rows[0] != 0 or rows[1] != cols[0] or cols[1] is not None:
        return None
    return cols[0]


def _prod_of_slice(graph: Graph, ref: TensorRef, x: TensorRef) -> tuple[int, int | None] | None:
    """``(begin, end)`` of ``Prod(StridedSlice(Shape(x), [begin], [end], [1]))``; ``end`` is
    ``None`` for "to the end" (``end_mask``)."""
    prod = graph.get(ref.node)
    if prod is None or prod.op != "Prod" or not prod.inputs:
        return None
    sliced = graph.get(prod.inputs[0].node)
    if sliced is None or sliced.op != "StridedSlice" or len(sliced.inputs) != 4:
        return None
    if not _is_shape_of(graph, sliced.inputs[0], x):
        return None
    begin, end, stride = (_single(graph, r) for r in sliced.inputs[1:])
    if begin is None or end is None or stride != 1:
        return None
    masks = {
        k: _int_attr(sliced, k)
        for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    }
    if masks["ellipsis_mask"] or masks["new_axis_mask"] or masks["shrink_axis_mask"]:
        return None
    start = 0 if masks["begin_mask"] & 1 else begin
    return start, (None if masks["end_mask"] & 1 else end)


def _single(graph: Graph, ref: TensorRef) -> int | None:
    node = graph.get(ref.node)
    value = scalar_value(node) if node is not None else None
    return int(value) if value is not None else None


def _int_attr(node: Node, name: str) -> int:
    value: Any = node.attrs.get(name)
    return int(value.i) if value is not None else 0


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
