"""The gradient region of a forward match in a training graph (graph/fusion/gradient.py)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.graph.fusion.conftest import place

from tf2npu.graph.fusion.gradient import GradientRegion, find_gradient, owner
from tf2npu.graph.fusion.pattern import match
from tf2npu.graph.fusion.rules import gelu_tanh
from tf2npu.graph.ir import Graph, TensorRef

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gradients/mul_3_grad/Mul_1", ("gradients/", "mul_3")),
        ("gradients_1/block/ln/add_1_grad/tuple/control_dependency", ("gradients_1/", "block/ln/add_1")),
        ("tower_0/gradients/Tanh_grad/TanhGrad", ("tower_0/gradients/", "Tanh")),
        ("gradients/mul_grad_grad/Mul", ("gradients/", "mul_grad")),
        ("gradients/mul_30_grad/Mul", None),  # mul_30 is not a pattern node
        ("gradients/AddN_2", None),  # an aggregation has no owner
        ("mul_3_grad/Mul", None),  # not under a gradients scope
    ],
)  # fmt: skip
def test_owner_is_the_pattern_node_whose_gradient_tf_named(name, expected) -> None:
    assert owner(name, {"mul_3", "mul_grad", "Tanh", "block/ln/add_1"}) == expected


def _gpt2_gelu(train: bool, extra: str = "") -> Graph:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        w = tf.compat.v1.get_variable("w", initializer=np.eye(4, dtype="f"), use_resource=False)
        h = tf.matmul(x, w, name="h")
        y = 0.5 * h * (1 + tf.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * tf.pow(h, 3))))
        loss = tf.reduce_sum(tf.identity(y, name="y") * 3.0, name="loss")
        if extra == "reader":
            loss += tf.reduce_sum(graph.get_tensor_by_name("Tanh:0"))
        if train:
            tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    return place(Graph.from_graph_def(graph.as_graph_def()))


def _match(graph: Graph):
    m = match(graph, graph["mul_3"], gelu_tanh.PATTERN)
    assert m is not None
    return m


def test_a_forward_graph_has_no_gradient_region() -> None:
    graph = _gpt2_gelu(train=False)
    m = _match(graph)
    assert find_gradient(graph, m, {"x": m.tensors["x"]}) is None


def test_the_region_reads_dy_and_sums_three_contributions_into_x() -> None:
    graph = _gpt2_gelu(train=True)
    m = _match(graph)
    region = find_gradient(graph, m, {"x": m.tensors["x"]})
    assert isinstance(region, GradientRegion)
    # d loss / d y: Mul(y)'s gradient, through the identity y (no op for Identity's gradient)
    assert region.dy == TensorRef("gradients/mul_4_grad/tuple/control_dependency")
    names = {n.name for n in region.nodes}
    assert {"gradients/Tanh_grad/TanhGrad", "gradients/Pow_grad/Pow"} <= names
    assert not any(n.startswith("gradients/h_grad/") for n in names)  # the matmul's: not ours
    # x = h is read by 0.5 * h, pow(h, 3) and h + ...: three contributions, one AddN
    assert sorted(r.node for r in region.contributions["x"]) == [
        "gradients/Pow_grad/tuple/control_dependency",
        "gradients/add_grad/tuple/control_dependency",
        "gradients/mul_grad/tuple/control_dependency_1",
    ]
    assert region.sums["x"].node.name == "gradients/AddN" and region.sums["x"].others == ()


def test_a_reader_of_an_intermediate_outside_the_gradient_is_named() -> None:
    graph = _gpt2_gelu(train=True, extra="reader")
    m = _match(graph)
    reason = find_gradient(graph, m, {"x": m.tensors["x"]})
    assert reason == "Sum reads the pattern and is not its gradient"


def test_a_second_gradient_flowing_in_is_refused() -> None:
    graph = _gpt2_gelu(train=True)
    z = graph.add_node("z", "Placeholder")
    tanh_grad = graph["gradients/Tanh_grad/TanhGrad"]
    graph.set_input(tanh_grad, 1, z.output())  # TanhGrad(y, dy): its dy is now z
    m = _match(graph)
    reason = find_gradient(graph, m, {"x": m.tensors["x"]})
    assert isinstance(reason, str) and "not one incoming gradient" in reason and "z" in reason


def test_an_outside_control_dependent_of_the_gradient_is_refused() -> None:
    graph = _gpt2_gelu(train=True)
    waiter = graph.add_node("waiter", "NoOp")
    graph.add_control_input(waiter, "gradients/Tanh_grad/TanhGrad")
    m = _match(graph)
    reason = find_gradient(graph, m, {"x": m.tensors["x"]})
    assert reason == "waiter waits on gradients/Tanh_grad/TanhGrad of the gradient"


def test_a_host_node_in_the_gradient_is_refused() -> None:
    graph = _gpt2_gelu(train=True)
    from tf2npu.graph.decisions import PLACEMENT, Placement

    graph["gradients/Tanh_grad/TanhGrad"].meta[PLACEMENT] = Placement(device=False)
    m = _match(graph)
    reason = find_gradient(graph, m, {"x": m.tensors["x"]})
    assert reason == "gradients/Tanh_grad/TanhGrad is not placed on the device"
