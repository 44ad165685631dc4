"""``matmul_biasadd``: MatMul + bias [+ Relu] → TF's ``_FusedMatMul``.

GE's ``MatMulBiasAddFusionPass`` folds the bias into the MatMul kernel; TF's own CPU remapper
does the same with ``_FusedMatMul`` (``fused_ops`` ``["BiasAdd"]`` or ``["BiasAdd", "Relu"]``),
which is what we emit so the fused graph still runs on stock TensorFlow. The dense layers people
write, as one pattern with alternatives:

* ``tf.nn.bias_add(tf.matmul(x, w), b)`` (``tf.layers.dense``, Keras ``Dense`` on a matrix);
* ``tf.matmul(x, w) + b`` (``Add``/``AddV2``, either operand order) with ``b`` a vector as long
  as the matmul's columns (its static shape must say so: a variable's or Const's shape, read
  through ``ReadVariableOp`` or the ``read`` Identity). In a training graph with an unknown
  batch size the Add's gradient reads ``Shape(matmul)`` (for ``BroadcastGradientArgs``); that
  reader moves to the fused matmul, which has the same shape (I-AutoRec's ``matmul(x, V) + mu``);
* a dense layer on a rank-3 input (``tf.layers.dense``/Keras ``Dense`` through ``tensordot``,
  or ``reshape(matmul(reshape(x), w), [..., n])``): the bias reads ``Reshape(MatMul)``. The
  bias commutes with the reshape when the reshape keeps the last dimension, so this becomes
  ``Reshape(_FusedMatMul(a, w, b))``; the last target dimension must be provably the matmul's
  column count (a Const, or the Const tail of tensordot's ``ConcatV2``/``Pack`` shape). In a
  training graph the Reshape's gradient reads ``Shape(matmul)``; that reader moves to the fused
  matmul (same shape), so this form fuses in training graphs too. A Relu after the reshape
  (``dense(x, n, activation=tf.nn.relu)`` on rank 3) joins the fused matmul the same way.
"""

from __future__ import annotations

from typing import ClassVar

from tf2npu.graph.fusion.attrs import AttrFactory, fused_ops
from tf2npu.graph.fusion.consts import const_values, scalar_value
from tf2npu.graph.fusion.pattern import Match, Op, Var, any_of, match
from tf2npu.graph.fusion.registry import FusionRule, register_rule
from tf2npu.graph.fusion.rewrite import Fusion, NewNode, Prev
from tf2npu.graph.fusion.rules._activation import extend_activation
from tf2npu.graph.fusion.rules._common import bool_attr, checked, copy_attrs, string_attr
from tf2npu.graph.fusion.shapes import static_shape
from tf2npu.graph.ir import Graph, Node, TensorRef

_ADD = {"Add", "AddV2"}
_MATMUL = Op("matmul", {"MatMul"}, (Var("a"), Var("b")))
_PRODUCT = any_of(_MATMUL, Op("reshape", {"Reshape"}, (_MATMUL, Var("shape"))))
PATTERN = any_of(
    Op("bias_add", {"BiasAdd"}, (_PRODUCT, Var("bias"))),
    Op("bias_add", _ADD, (_PRODUCT, Var("bias"))),
)
TAG = "fused_matmul"


@register_rule
class MatmulBiasadd(FusionRule):
    """MatMul followed by a bias, and optionally Relu, becomes one ``_FusedMatMul``."""

    name: ClassVar[str] = "matmul_biasadd"
    category: ClassVar[str] = "GraphFusion"
    aliases: ClassVar[tuple[str, ...]] = ("MatMulBiasAddFusionPass",)
    description: ClassVar[str] = (
        "MatMul [+ Reshape] + BiasAdd|Add [+ Relu] -> _FusedMatMul (fused_ops BiasAdd[, Relu])"
    )
    roots: ClassVar[frozenset[str]] = frozenset({"BiasAdd", "Add", "AddV2", "Relu"})

    def match(self, graph: Graph, root: Node) -> Fusion | None:
        if root.op == "Relu":
            return extend_activation(
                graph,
                root,
                fused_op="_FusedMatMul",
                first="BiasAdd",
                activations={"Relu"},
                tag=TAG,
                output_arg="product",
            ) or _relu_through_reshape(graph, root)
        m = match(graph, root, PATTERN)
        if m is None or not _bias_fits(graph, m):
            return None
        matmul = m.nodes["matmul"]
        make = AttrFactory([matmul])
        attrs = copy_attrs(matmul, ("T", "transpose_a", "transpose_b"))
        attrs["num_args"] = make.integer(1)
        attrs["fused_ops"] = make.strings(["BiasAdd"])
        attrs["epsilon"] = make.real(0.0001)
        inputs = (m.tensors["a"], m.tensors["b"], m.tensors["bias"])
        steps = [NewNode(TAG, "_FusedMatMul", inputs, attrs, ("product",))]
        if "reshape" not in m.nodes:
            # ``matmul + b`` in a training graph: the Add gradient reads Shape(matmul)
            return checked(graph, m, steps, shaped={matmul.name: Prev(0)})
        reshape = m.nodes["reshape"]
        steps.append(
            NewNode(
                "reshape",
                "Reshape",
                (Prev(0), m.tensors["shape"]),
                copy_attrs(reshape, ("T", "Tshape")),
                ("output",),
            )
        )
        # the Reshape gradient reads Shape(matmul): the fused matmul has that shape
        return checked(graph, m, steps, shaped={matmul.name: Prev(0)})


#: ``Relu(Reshape(_FusedMatMul[BiasAdd]))``: a rank-3 dense with a relu (t2t's
#: ``dense_relu_dense``). The relu commutes with the reshape.
_RESHAPED_RELU = Op(
    "relu",
    {"Relu"},
    (
        Op(
            "reshape",
            {"Reshape"},
            (Op("fused", {"_FusedMatMul"}, (Var("a"), Var("b"), Var("bias"))), Var("shape")),
        ),
    ),
)


def _relu_through_reshape(graph: Graph, root: Node) -> Fusion | None:
    m = match(graph, root, _RESHAPED_RELU)
    if m is None or fused_ops(m.nodes["fused"]) != ("BiasAdd",):
        return None
    fused, reshape = m.nodes["fused"], m.nodes["reshape"]
    attrs = dict(fused.attrs)
    attrs["fused_ops"] = AttrFactory([fused]).strings(["BiasAdd", "Relu"])
    steps = [
        NewNode(TAG, "_FusedMatMul", fused.inputs, attrs, ("product",)),
        NewNode(
            "reshape",
            "Reshape",
            (Prev(0), m.tensors["shape"]),
            copy_attrs(reshape, ("T", "Tshape")),
            ("output",),
        ),
    ]
    return checked(graph, m, steps, shaped={fused.name: Prev(0)})


def _bias_fits(graph: Graph, m: Match) -> bool:
    """Whether adding the bias after the matmul is what ``_FusedMatMul``'s BiasAdd does."""
    columns = _columns(graph, m)
    reshaped = "reshape" in m.nodes
    if reshaped and (columns is None or _last_dim(graph, m.tensors["shape"]) != columns):
        return False  # the reshape must keep the last dimension for the bias to commute
    root = m.root
    if root.op == "BiasAdd":  # BiasAdd itself checks the bias length against the last dim
        return not reshaped or string_attr(root, "data_format", "NHWC") == "NHWC"
    shape = static_shape(graph, m.tensors["bias"])
    if shape is None or len(shape) != 1:
        return False
    # with the column count unknown, a bias longer than 1 only broadcasts if it matches it
    return shape[0] == columns if columns is not None else shape[0] > 1 and not reshaped


def _columns(graph: Graph, m: Match) -> int | None:
    """The matmul's output columns, from the static shape of its second operand."""
    shape = static_shape(graph, m.tensors["b"])
    if shape is None or len(shape) != 2:
        return None
    return shape[0] if bool_attr(m.nodes["matmul"], "transpose_b", False) else shape[1]


def _last_dim(graph: Graph, ref: TensorRef) -> int | None:
    """The last element of a reshape's target shape, when a Const in the graph states it."""
    node = graph.get(ref.node)
    if node is None:
        return None
    values = const_values(node)
    if values is not None:
        return int(values[-1]) if values else None
    if node.op == "ConcatV2" and len(node.inputs) >= 2:  # tensordot: concat(free_dims, [n])
        return _last_dim(graph, node.inputs[-2])
    if node.op == "Pack" and node.inputs:  # reshape(y, [batch, seq, n])
        last = graph.get(node.inputs[-1].node)
        value = scalar_value(last) if last is not None else None
        return int(value) if value is not None else None
    return None
