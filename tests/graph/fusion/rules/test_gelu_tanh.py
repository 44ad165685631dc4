"""gelu_tanh: BERT's tanh GELU subgraph → the Gelu NPU op."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "gelu_tanh"


def gelu(
    *,
    dtype: str = "float32",
    cube: str = "pow",
    grouping: str = "bert",
    extra: bool = False,
    coefficient: float = 0.044715,
) -> None:
    import tensorflow as tf

    x = tf.compat.v1.placeholder(dtype, [3, 7], name="x")
    x3 = tf.pow(x, 3) if cube == "pow" else x * x * x
    t = tf.tanh(np.sqrt(2 / np.pi).astype(dtype) * (x + coefficient * x3), name="tanh")
    if extra:
        tf.identity(t, name="side")
    if grouping == "bert":  # google-research/bert modeling.gelu
        cdf = 0.5 * (1.0 + t)
        tf.multiply(x, cdf, name="out")
    else:
        tf.multiply(0.5 * x, 1.0 + t, name="out")


# Each library's gelu as its source writes it (our code reproducing the formula), ending in a
# node named "out". BERT, ALBERT, XLNet and tensor2tensor write the same expression.
def _bert(x):  # google-research/bert, ALBERT, XLNet (tf.tanh), tensor2tensor common_layers
    import tensorflow as tf

    cdf = 0.5 * (1.0 + tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


def _gpt2(x):  # openai/gpt-2 model.gelu
    import tensorflow as tf

    return 0.5 * x * (1 + tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 3))))


def _tf_nn(x):
    import tensorflow as tf

    return tf.nn.gelu(x, approximate=True)


def _x_half_cubed(x):  # x * 0.5 * (...) with x * x * x
    import tensorflow as tf

    return x * 0.5 * (1.0 + tf.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * (x * x * x))))


def _square_times_x(x):  # 0.5 * (x * (1 + t)) with square(x) * x
    import tensorflow as tf

    return 0.5 * (x * (1.0 + tf.tanh(0.7978845608 * (x + 0.044715 * (tf.square(x) * x)))))


def _swapped(x):  # every operand the other way round
    import tensorflow as tf

    inner = tf.pow(x, 3.0) * 0.044715 + x
    return ((tf.tanh(inner * np.sqrt(2 / np.pi)) + 1.0) * 0.5) * x


FORMS = {
    "bert_albert_xlnet_t2t": _bert,
    "gpt2": _gpt2,
    "tf_nn_gelu_approximate": _tf_nn,
    "x_half_cubed": _x_half_cubed,
    "square_times_x": _square_times_x,
    "swapped": _swapped,
}


def form(fn) -> None:
    import tensorflow as tf

    x = tf.compat.v1.placeholder(tf.float32, [3, 7], name="x")
    tf.identity(fn(x), name="out")


def root_of(gd) -> str:
    """The node the identity "out" reads (the pattern's root)."""
    return next(n.input[0] for n in gd.node if n.name == "out")


@pytest.mark.parametrize("name", list(FORMS))
def test_each_library_form_becomes_one_gelu(fx, rand, name: str) -> None:
    gd = fx.graph_def(lambda: form(FORMS[name]))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    root = root_of(gd)
    node = out.graph[replacement_of(out.graph, TensorRef(root)).node]
    assert node.op == "Gelu" and [str(r) for r in node.inputs] == ["x"]
    assert [str(r) for r in out.graph["out"].inputs] == [f"{node.name}"]
    before, after = fx.compare(gd, out, root, {"x": 3 * rand(3, 7)})
    np.testing.assert_allclose(after, before, rtol=2e-6, atol=1e-6)


def _erf_nn(x):
    import tensorflow as tf

    return tf.nn.gelu(x, approximate=False)


def _erf_keras(x):
    import tensorflow as tf

    return tf.keras.activations.gelu(x)  # what Dense(activation="gelu") calls


def _other_x(x):  # 0.5 * y * (1 + tanh(... x ...)) with y != x
    import tensorflow as tf

    y = x + 1.0
    return 0.5 * y * (1 + tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 3))))


def _square_not_cube(x):
    import tensorflow as tf

    return 0.5 * x * (1 + tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 2))))


@pytest.mark.parametrize(
    "fn",
    [_erf_nn, _erf_keras, _other_x, _square_not_cube],
    ids=["erf_tf_nn", "erf_keras", "two_tensors", "pow_2"],
)
def test_other_functions_do_not_fire(fx, fn) -> None:
    assert fx.fuse(fx.graph_def(lambda: form(fn))).stats[RULE] == 0


@pytest.mark.parametrize(
    ("cube", "grouping"), [("pow", "bert"), ("mul", "bert"), ("pow", "half_x")]
)
def test_gelu_subgraph_becomes_one_gelu(fx, rand, cube, grouping) -> None:
    gd = fx.graph_def(lambda: gelu(cube=cube, grouping=grouping))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    ref = replacement_of(out.graph, TensorRef("out"))
    node = out.graph[ref.node]
    assert node.op == "Gelu" and [str(r) for r in node.inputs] == ["x"]
    assert SUPERSEDED in out.graph["tanh"].meta
    before, after = fx.compare(gd, out, "out", {"x": 3 * rand(3, 7)})
    np.testing.assert_allclose(after, before, rtol=2e-6, atol=1e-6)


def test_float16_constants_match_within_tolerance(fx) -> None:
    out = fx.fuse(fx.graph_def(lambda: gelu(dtype="float16")))
    assert out.stats[RULE] == 1


@pytest.mark.parametrize(
    "kwargs",
    [{"extra": True}, {"coefficient": 0.05}],
    ids=["tanh_read_elsewhere", "wrong_constant"],
)
def test_near_misses_do_not_fire(fx, kwargs) -> None:
    assert fx.fuse(fx.graph_def(lambda: gelu(**kwargs))).stats[RULE] == 0


def test_a_host_node_blocks_it(fx) -> None:
    assert fx.fuse(fx.graph_def(gelu), host={"tanh"}).stats[RULE] == 0


def test_in_a_training_graph_the_gradients_block_it(fx) -> None:
    import tensorflow as tf

    def train() -> None:
        gelu()
        g = tf.compat.v1.get_default_graph()
        tf.gradients(g.get_tensor_by_name("out:0"), [g.get_tensor_by_name("x:0")])

    assert fx.fuse(fx.graph_def(train)).stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "GeluFusionPass"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(gelu), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == ["out"]


def test_sqrt_two_over_pi_is_the_constant_matched() -> None:
    from tf2npu.graph.fusion.pattern import Const
    from tf2npu.graph.fusion.rules.gelu_tanh import PATTERN

    gelu_op = PATTERN.alternatives[1]
    one_plus = gelu_op.inputs[1]  # type: ignore[union-attr]
    scaled = one_plus.inputs[1].inputs[0]  # type: ignore[union-attr]
    [c] = [p for p in scaled.inputs if isinstance(p, Const)]
    assert c.value == pytest.approx(math.sqrt(2 / math.pi))


# --- training graphs (issue 23): the gradient TF built for the pattern becomes GeluGrad -------


def _xlnet(x):  # zihangdai/xlnet modeling.gelu
    import tensorflow as tf

    cdf = 0.5 * (1.0 + tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


TRAINED = {**FORMS, "xlnet": _xlnet}


def _gelu_loss(fn, residual: bool = False):
    """``fn``'s gelu of a dense layer (a variable weight), then a fixed projection."""
    import tensorflow as tf

    rng = np.random.default_rng(4)
    x = tf.constant(rng.standard_normal((6, 5)).astype("f"))
    w = tf.compat.v1.get_variable("w", initializer=rng.standard_normal((5, 7)).astype("f"))
    h = tf.matmul(tf.compat.v1.placeholder_with_default(x, [None, 5]), w)
    y = fn(h)
    if residual:
        y = y + 0.5 * h
    return tf.reduce_sum(y * tf.constant(rng.standard_normal(7).astype("f")))


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("name", list(TRAINED))
def test_each_form_fuses_in_a_training_graph_with_gelu_grad(fx, name: str, optimizer: str) -> None:
    trained = fx.train(lambda: _gelu_loss(TRAINED[name]), optimizer=optimizer)
    assert trained.outcome.stats[RULE] == 1
    graph = trained.outcome.graph
    [gelu] = [n for n in graph if n.op == "Gelu"]
    [grad] = [n for n in graph if n.op == "GeluGrad"]
    assert [str(r) for r in grad.inputs[1:]] == [str(gelu.inputs[0]), gelu.name]  # x, y
    # the MatMul's gradient now reads GeluGrad where it read the sum of the pattern's gradients
    readers = [u for u in graph.consumers(grad) if SUPERSEDED not in u.meta]
    assert readers and all(u.name.startswith("gradients/MatMul_grad/") for u in readers)
    assert grad.origin[0].startswith("gradients/AddN")  # the sum it carries
    for node in graph:
        if node.name.startswith(("gradients/Tanh_grad/", "gradients/Pow_grad/")):
            assert node.meta[SUPERSEDED].rule == RULE, node.name
    trained.assert_same()


def test_with_a_residual_reader_of_x_the_sum_keeps_the_other_contribution(fx) -> None:
    trained = fx.train(lambda: _gelu_loss(_gpt2, residual=True))
    graph = trained.outcome.graph
    [grad] = [n for n in graph if n.op == "GeluGrad"]
    [total] = [u for u in graph.consumers(grad) if u.op == "AddN"]
    assert total.name.endswith("/_tf2npu_grad_sum") and total.attrs["N"].i == 2
    assert total.inputs[0] == grad.output(0)
    trained.assert_same()


def test_a_gradient_of_an_intermediate_taken_on_its_own_blocks_it(fx) -> None:
    import tensorflow as tf

    def build():
        loss = _gelu_loss(_gpt2)
        tanh = next(op for op in tf.compat.v1.get_default_graph().get_operations()
                    if op.type == "Tanh")  # fmt: skip
        # a second loss term reads tanh outside the pattern: the intermediate must stay
        return loss + tf.reduce_sum(tanh.outputs[0] * 0.1)

    trained = fx.train(build, steps=1)
    assert trained.outcome.stats[RULE] == 0
    trained.assert_same()
