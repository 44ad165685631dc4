"""matmul_biasadd: MatMul + BiasAdd [+ Relu] → _FusedMatMul, and the cases it must refuse."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = [
    pytest.mark.tf,
    pytest.mark.filterwarnings("ignore:`tf.layers.dense` is deprecated"),
]

RULE = "matmul_biasadd"


def dense(*, relu: bool = True, extra: str = "", cast: bool = False) -> None:
    import tensorflow as tf

    x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
    w = tf.constant(np.random.default_rng(1).standard_normal((8, 5)).astype(np.float32), name="w")
    b = tf.constant(np.arange(5, dtype=np.float32) - 2.0, name="b")
    y = tf.matmul(x, w, name="matmul")
    if cast:
        y = tf.cast(tf.cast(y, tf.float16), tf.float32, name="back")
    if extra == "matmul":
        tf.identity(y, name="side")
    y = tf.nn.bias_add(y, b, name="bias")
    if extra == "bias":
        tf.identity(y, name="side")
    if relu:
        tf.nn.relu(y, name="out")


def test_matmul_bias_relu_becomes_one_fused_matmul(fx, rand) -> None:
    gd = fx.graph_def(dense)
    out = fx.fuse(gd)
    assert out.stats[RULE] == 2  # BiasAdd into the MatMul, then Relu into that node
    fused = out.graph[replacement_of(out.graph, TensorRef("out")).node]
    assert fused.op == "_FusedMatMul"
    assert [s.decode() for s in fused.attrs["fused_ops"].list.s] == ["BiasAdd", "Relu"]
    assert fused.attrs["num_args"].i == 1
    assert set(fused.origin) == {"matmul", "bias", "out"}
    assert all(SUPERSEDED in out.graph[n].meta for n in ("matmul", "bias", "out"))
    before, after = fx.compare(gd, out, "out", {"x": rand(4, 8)})
    np.testing.assert_array_equal(after, before)


def test_without_relu_fuses_the_bias_only(fx, rand) -> None:
    gd = fx.graph_def(lambda: dense(relu=False))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    fused = out.graph[replacement_of(out.graph, TensorRef("bias")).node]
    assert [s.decode() for s in fused.attrs["fused_ops"].list.s] == ["BiasAdd"]
    before, after = fx.compare(gd, out, "bias", {"x": rand(4, 8)})
    np.testing.assert_array_equal(after, before)


def test_a_second_reader_of_the_matmul_blocks_it(fx) -> None:
    out = fx.fuse(fx.graph_def(lambda: dense(extra="matmul")))
    assert out.stats[RULE] == 0
    assert SUPERSEDED not in out.graph["matmul"].meta


def test_a_second_reader_of_the_bias_add_stops_before_the_relu(fx) -> None:
    out = fx.fuse(fx.graph_def(lambda: dense(extra="bias")))
    assert out.stats[RULE] == 1
    assert SUPERSEDED not in out.graph["out"].meta


def test_a_cast_between_matmul_and_bias_breaks_the_pattern(fx) -> None:
    assert fx.fuse(fx.graph_def(lambda: dense(cast=True))).stats[RULE] == 0


def test_a_host_node_in_the_pattern_blocks_it(fx) -> None:
    out = fx.fuse(fx.graph_def(dense), host={"matmul"})
    assert out.stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "MatMulBiasAddFusionPass"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(dense), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    [info] = [d for d in out.diagnostics.items if d.code == "fusion_rule_switched_off"]
    assert info.severity == "info" and info.node == "bias" and "once" in info.message


# Dense layers as people write them, each read by the identity "out".
def _weights(rows: int = 8, cols: int = 5):
    import tensorflow as tf

    rng = np.random.default_rng(1)
    w = tf.constant(rng.standard_normal((rows, cols)).astype(np.float32), name="w")
    b = tf.constant(rng.standard_normal(cols).astype(np.float32), name="b")
    return w, b


def _matmul_plus_b(x):  # y = tf.matmul(x, w) + b
    import tensorflow as tf

    w, b = _weights()
    return tf.matmul(tf.reshape(x, [-1, 8]), w) + b


def _b_plus_matmul_transposed(x):  # b + matmul(x, w^T, transpose_b=True)
    import tensorflow as tf

    w, _ = _weights(5, 8)
    _, b = _weights()
    return b + tf.matmul(tf.reshape(x, [-1, 8]), w, transpose_b=True)


def _layers_dense(x):  # tf.layers.dense on a rank-3 input: tensordot + BiasAdd
    import tensorflow as tf

    return tf.compat.v1.layers.dense(x, 5, name="dense")


def _keras_dense(x):  # Keras Dense on a rank-3 input (resource variables)
    import tensorflow as tf

    return tf.keras.layers.Dense(5, name="kdense")(x)


def _manual_reshape(x):  # BERT-style: reshape to a matrix, dense, reshape back, + b
    import tensorflow as tf

    w, b = _weights()
    y = tf.matmul(tf.reshape(x, [-1, 8]), w)
    return tf.reshape(y, [-1, 3, 5]) + b


DENSE_FORMS = {
    "matmul_plus_b": _matmul_plus_b,
    "b_plus_matmul_t": _b_plus_matmul_transposed,
    "layers_dense_rank3": _layers_dense,
    "keras_dense_rank3": _keras_dense,
    "manual_reshape": _manual_reshape,
}


def dense_form(fn, batch: int | None) -> None:
    import tensorflow as tf

    x = tf.compat.v1.placeholder(tf.float32, [batch, 3, 8], name="x")
    tf.identity(fn(x), name="out")
    tf.compat.v1.global_variables_initializer()  # named "init"


@pytest.mark.parametrize("batch", [2, None], ids=["static", "dynamic_batch"])
@pytest.mark.parametrize("name", list(DENSE_FORMS))
def test_each_dense_form_becomes_one_fused_matmul(fx, rand, name: str, batch) -> None:
    gd = fx.graph_def(lambda: dense_form(DENSE_FORMS[name], batch))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    root = next(n.input[0] for n in gd.node if n.name == "out")
    ref = replacement_of(out.graph, TensorRef(root))
    fused = out.graph[ref.node]
    if fused.op == "Reshape":
        assert name not in ("matmul_plus_b", "b_plus_matmul_t")
        fused = out.graph[fused.inputs[0].node]
    assert fused.op == "_FusedMatMul"
    assert [s.decode() for s in fused.attrs["fused_ops"].list.s] == ["BiasAdd"]
    init = ["init"] if any(n.name == "init" for n in gd.node) else []
    before, after = fx.compare(gd, out, root, {"x": rand(2, 3, 8)}, init)
    np.testing.assert_allclose(after, before, rtol=1e-6, atol=1e-6)


def _bias_matrix(x):  # matmul + a [1, n] bias: broadcasting, but not a BiasAdd
    import tensorflow as tf

    w, b = _weights()
    return tf.matmul(tf.reshape(x, [-1, 8]), w) + tf.reshape(b, [1, 5])


def _bias_scalar(x):
    import tensorflow as tf

    w, _ = _weights()
    return tf.matmul(tf.reshape(x, [-1, 8]), w) + 1.0


def _reshape_changes_last_dim(x):  # [6, 4] -> [2, 3, 2, 2]: the bias would not commute
    import tensorflow as tf

    w = tf.constant(np.ones((8, 4), np.float32), name="w")
    y = tf.reshape(tf.matmul(tf.reshape(x, [-1, 8]), w), [-1, 3, 2, 2])
    return tf.nn.bias_add(y, tf.constant([1.0, 2.0]))


@pytest.mark.parametrize(
    "fn",
    [_bias_matrix, _bias_scalar, _reshape_changes_last_dim],
    ids=["bias_1xn", "bias_scalar", "reshape_changes_last_dim"],
)
def test_near_miss_dense_forms_do_not_fire(fx, fn) -> None:
    assert fx.fuse(fx.graph_def(lambda: dense_form(fn, 2))).stats[RULE] == 0


def test_keras_dense_gelu_fuses_the_dense_but_not_the_erf_gelu(fx) -> None:
    import tensorflow as tf

    def build() -> None:
        x = tf.compat.v1.placeholder(tf.float32, [None, 3, 8], name="x")
        tf.keras.layers.Dense(5, activation="gelu")(x)

    out = fx.fuse(fx.graph_def(build))
    assert out.stats[RULE] == 1 and out.stats["gelu_tanh"] == 0


def test_rank3_dense_with_relu_becomes_reshape_of_one_fused_matmul(fx, rand) -> None:
    import tensorflow as tf

    def build() -> None:
        x = tf.compat.v1.placeholder(tf.float32, [None, 3, 8], name="x")
        y = tf.compat.v1.layers.dense(x, 5, activation=tf.nn.relu, name="dense")
        tf.identity(y, name="out")
        tf.compat.v1.global_variables_initializer()

    gd = fx.graph_def(build)
    out = fx.fuse(gd)
    assert out.stats[RULE] == 2  # the bias, then the relu through the reshape
    reshape = out.graph[replacement_of(out.graph, TensorRef("dense/Relu")).node]
    assert reshape.op == "Reshape"
    fused = out.graph[reshape.inputs[0].node]
    assert [s.decode() for s in fused.attrs["fused_ops"].list.s] == ["BiasAdd", "Relu"]
    before, after = fx.compare(gd, out, "dense/Relu", {"x": rand(2, 3, 8)}, ["init"])
    np.testing.assert_allclose(after, before, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("relu", [False, True], ids=["bias", "bias_relu"])
def test_rank3_dense_fuses_in_a_training_graph_and_the_gradients_agree(fx, rand, relu) -> None:
    """The Reshape gradient reads Shape(matmul); it moves to the fused matmul (same shape)."""
    import tensorflow as tf

    def train() -> None:
        x = tf.compat.v1.placeholder(tf.float32, [None, 3, 8], name="x")
        act = tf.nn.relu if relu else None
        y = tf.compat.v1.layers.dense(x, 5, activation=act, name="dense")
        w = tf.compat.v1.trainable_variables()
        grads = tf.gradients(tf.reduce_sum(y * y), [x, *w])
        for i, g in enumerate(grads):
            tf.identity(g, name=f"grad{i}")
        tf.compat.v1.global_variables_initializer()

    gd = fx.graph_def(train)
    out = fx.fuse(gd)
    assert out.stats[RULE] == (2 if relu else 1)
    [shape] = [n.name for n in gd.node if n.op == "Shape" and n.input == ["dense/Tensordot/MatMul"]]
    assert out.graph[out.graph[shape].inputs[0].node].op == "_FusedMatMul"
    feeds = {"x": rand(2, 3, 8)}
    fused = out.graph.to_graph_def()
    for i in range(3):
        before = fx.run(gd, f"grad{i}:0", feeds, ["init"])
        after = fx.run(fused, f"grad{i}:0", feeds, ["init"])
        np.testing.assert_allclose(after, before, rtol=1e-6, atol=1e-6)


def test_rank3_dense_fuses_in_a_mixed_precision_training_graph(fx, rand, tmp_path) -> None:
    """Under allow_mix_precision the Reshape gradient's Shape reads the matmul through the
    precision pass's cast back to float32; it moves to the fused matmul all the same."""
    import tensorflow as tf

    from tf2npu.config.options import NpuOptions
    from tf2npu.graph.engine import run_engine
    from tf2npu.graph.ir import Graph

    def train() -> None:
        x = tf.compat.v1.placeholder(tf.float32, [None, 3, 8], name="x")
        y = tf.compat.v1.layers.dense(x, 5, name="dense")
        grads = tf.gradients(tf.reduce_sum(y * y), [x, *tf.compat.v1.trainable_variables()])
        for i, g in enumerate(grads):
            tf.identity(g, name=f"grad{i}")
        tf.compat.v1.global_variables_initializer()

    gd = fx.graph_def(train)
    off = tmp_path / "off.json"
    off.write_text(fx.switch_off("ALL"))
    feeds = {"x": rand(2, 3, 8)}
    values, counts = [], []
    for switch in ({}, {"fusion_switch_file": str(off)}):
        options = {"precision_mode": "allow_mix_precision", **switch}
        run = run_engine(Graph.from_graph_def(gd), NpuOptions.from_values(options))
        counts.append(run.pipeline.stats["fusion"][RULE])
        fused = run.graph.to_graph_def()
        values.append([fx.run(fused, f"grad{i}:0", feeds, ["init"]) for i in range(3)])
    assert counts == [1, 0]
    for with_fusion, without in zip(*values, strict=True):
        np.testing.assert_allclose(with_fusion, without, rtol=2e-3, atol=2e-3)


# --- training graphs (issue 23): tf.matmul(x, V) + mu with a variable mu (I-AutoRec) ---------


def _autorec_loss(resource: bool):
    """I-AutoRec's encoder ``sigmoid(tf.matmul(x, V) + mu)`` on a batch of unknown size."""
    import tensorflow as tf

    rng = np.random.default_rng(5)
    x = tf.compat.v1.placeholder_with_default(rng.standard_normal((4, 6)).astype("f"), [None, 6])
    v = tf.compat.v1.get_variable("V", initializer=rng.standard_normal((6, 3)).astype("f"))
    mu = tf.compat.v1.get_variable("mu", initializer=np.zeros(3, "f"))
    hidden = tf.sigmoid(tf.matmul(x, v) + mu)
    return tf.reduce_sum(tf.square(hidden - 0.5))


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("resource", [False, True], ids=["identity_read", "read_variable_op"])
def test_matmul_plus_a_variable_fuses_in_a_training_graph(fx, resource, optimizer) -> None:
    trained = fx.train(lambda: _autorec_loss(resource), optimizer=optimizer, resource=resource)
    assert trained.outcome.stats[RULE] == 1
    graph = trained.outcome.graph
    [fused] = [n for n in graph if n.op == "_FusedMatMul"]
    bias = graph[fused.inputs[2].node]
    assert bias.op == ("ReadVariableOp" if resource else "Identity")
    # the Add gradient's Shape(matmul) (for BroadcastGradientArgs) now reads the fused matmul
    [shape] = [n for n in graph if n.name == "gradients/add_grad/Shape"]
    assert [str(r) for r in shape.inputs] == [fused.name]
    trained.assert_same()
