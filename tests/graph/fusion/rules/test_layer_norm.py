"""layer_norm: the moments + batch_normalization subgraph → the LayerNorm NPU op."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "layer_norm"


def layer_norm(
    *, axes: tuple[int, ...] = (-1,), extra: bool = False, keep: bool = True, cast: bool = False
) -> None:
    """What tf.contrib.layers.layer_norm (BERT's layer_norm) builds, begin_norm_axis=-1."""
    import tensorflow as tf

    rng = np.random.default_rng(6)
    x = tf.compat.v1.placeholder(tf.float32, [2, 3, 8], name="x")
    params = [8] if axes == (-1,) else [3, 8]
    gamma = tf.constant(rng.standard_normal(params).astype(np.float32), name="gamma")
    beta = tf.constant(rng.standard_normal(params).astype(np.float32), name="beta")
    mean, variance = tf.compat.v1.nn.moments(x, list(axes), keep_dims=keep, name="moments")
    if cast:
        variance = tf.cast(tf.cast(variance, tf.float16), tf.float32)
    y = tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-12, name="ln")
    tf.identity(y, name="out")
    if extra:
        tf.identity(tf.compat.v1.get_default_graph().get_tensor_by_name("ln/Rsqrt:0"), name="side")


def test_layer_norm_subgraph_becomes_one_layer_norm(fx, rand) -> None:
    gd = fx.graph_def(layer_norm)
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    ref = replacement_of(out.graph, TensorRef("ln/add_1"))
    node = out.graph[ref.node]
    assert node.op == "LayerNorm"
    assert [str(r) for r in node.inputs] == ["x", "gamma", "beta"]
    assert node.attrs["begin_norm_axis"].i == -1
    assert node.attrs["epsilon"].f == pytest.approx(1e-12)
    # the fused op returns the statistics too: the Means are superseded by outputs 1 and 2
    assert replacement_of(out.graph, TensorRef("moments/mean")) == TensorRef(node.name, 1)
    assert replacement_of(out.graph, TensorRef("moments/variance")) == TensorRef(node.name, 2)
    before, after = fx.compare(gd, out, "ln/add_1", {"x": rand(2, 3, 8)})
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_readers_of_the_statistics_move_to_the_fused_outputs(fx) -> None:
    import tensorflow as tf

    def build() -> None:
        layer_norm()
        g = tf.compat.v1.get_default_graph()
        tf.identity(g.get_tensor_by_name("moments/variance:0"), name="side")

    out = fx.fuse(fx.graph_def(build))
    assert out.stats[RULE] == 1
    [read] = out.graph["side"].inputs
    assert out.graph[read.node].op == "LayerNorm" and read.index == 2


def test_two_trailing_axes_with_a_known_rank(fx, rand) -> None:
    gd = fx.graph_def(lambda: layer_norm(axes=(1, 2)))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    node = out.graph[replacement_of(out.graph, TensorRef("ln/add_1")).node]
    assert node.attrs["begin_norm_axis"].i == 1
    before, after = fx.compare(gd, out, "ln/add_1", {"x": rand(2, 3, 8)})
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs",
    [{"extra": True}, {"axes": (0, 1)}, {"cast": True}],
    ids=["rsqrt_read_elsewhere", "leading_axes", "cast_inside"],
)
def test_near_misses_do_not_fire(fx, kwargs) -> None:
    out = fx.fuse(fx.graph_def(lambda: layer_norm(**kwargs)))
    assert out.stats[RULE] == 0
    assert SUPERSEDED not in out.graph["ln/add_1"].meta


def test_a_host_node_blocks_it(fx) -> None:
    assert fx.fuse(fx.graph_def(layer_norm), host={"moments/variance"}).stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "LayerNormFusionPass"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(layer_norm), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == ["ln/add_1"]


# Each library's layer norm as its source writes it (our code reproducing the formula) on a
# rank-3 residual sum x = a + b whose rank the graph proves only through the Add; the result is
# read by the identity "out".
def _inputs():
    import tensorflow as tf

    a = tf.compat.v1.placeholder(tf.float32, [None, 3, 8], name="a")
    b = tf.compat.v1.placeholder(tf.float32, [None, 3, 8], name="b")
    return a + b


def _params():
    import tensorflow as tf

    rng = np.random.default_rng(6)
    gamma = tf.constant(rng.standard_normal([8]).astype(np.float32), name="gamma")
    beta = tf.constant(rng.standard_normal([8]).astype(np.float32), name="beta")
    return gamma, beta


def _contrib(x):  # BERT / ALBERT / XLNet: tf.contrib.layers.layer_norm (our compat)
    from tf2npu.compat.contrib.layers import layer_norm as contrib_layer_norm

    return contrib_layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1)


def _keras(x):  # tf.keras.layers.LayerNormalization (Keras 2 in TF 2.15, TF1 graph)
    import tensorflow as tf

    # epsilon < 1.001e-5: Keras builds tf.nn.moments + tf.nn.batch_normalization
    return tf.keras.layers.LayerNormalization(epsilon=1e-12)(x)


def _keras_fused(x):
    import tensorflow as tf

    # the default epsilon (1e-3): Keras reshapes x to [1, rows, cols, 1] for FusedBatchNormV3
    return tf.keras.layers.LayerNormalization()(x)


def _keras_fused_two_axes(x):  # normalise the last two axes of a rank-4 tensor
    import tensorflow as tf

    x4 = tf.reshape(x, [-1, 3, 2, 4])
    return tf.keras.layers.LayerNormalization(axis=[2, 3], epsilon=1e-4)(x4)


def _t2t(x):  # tensor2tensor common_layers.layer_norm_compute
    import tensorflow as tf

    scale, bias = _params()
    mean = tf.reduce_mean(x, axis=[-1], keepdims=True)
    variance = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=[-1], keepdims=True)
    norm_x = (x - mean) * tf.math.rsqrt(variance + 1e-6)
    return norm_x * scale + bias


def _gpt2(x):  # openai/gpt-2 model.norm
    import tensorflow as tf

    g, b = _params()
    u = tf.reduce_mean(x, axis=[-1], keepdims=True)
    s = tf.reduce_mean(tf.square(x - u), axis=[-1], keepdims=True)
    x = (x - u) * tf.math.rsqrt(s + 1e-5)
    return x * g + b


def _moments_rsqrt(x):  # plain TF: tf.nn.moments + tf.rsqrt (examples/tf1/transformer_block_gelu)
    import tensorflow as tf

    gamma, beta = _params()
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(variance + 1e-12) * gamma + beta


def _div_sqrt(x):  # 1 / sqrt instead of rsqrt, one x - mean, scale folded first, operands swapped
    import tensorflow as tf

    gamma, beta = _params()
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    d = x - mean
    variance = tf.reduce_mean(d * d, axis=-1, keepdims=True)
    return beta + gamma * (d / tf.sqrt(1e-5 + variance))


def _scale_first(x):  # (x - mean) * (rsqrt(var + eps) * gamma) + beta, variance via pow
    import tensorflow as tf

    gamma, beta = _params()
    mean = tf.reduce_mean(x, axis=[-1], keepdims=True)
    variance = tf.reduce_mean(tf.pow(x - mean, 2.0), axis=[-1], keepdims=True)
    return (x - mean) * (tf.math.rsqrt(variance + 1e-6) * gamma) + beta


LN_FORMS = {
    "contrib_bert_albert_xlnet": _contrib,
    "keras": _keras,
    "keras_fused": _keras_fused,
    "keras_fused_two_axes": _keras_fused_two_axes,
    "t2t": _t2t,
    "gpt2": _gpt2,
    "moments_rsqrt": _moments_rsqrt,
    "div_sqrt": _div_sqrt,
    "scale_first": _scale_first,
}


def ln_form(fn) -> None:
    import tensorflow as tf

    tf.identity(fn(_inputs()), name="out")
    tf.compat.v1.global_variables_initializer()  # named "init"


@pytest.mark.parametrize("name", list(LN_FORMS))
def test_each_library_form_becomes_one_layer_norm(fx, rand, name: str) -> None:
    gd = fx.graph_def(lambda: ln_form(LN_FORMS[name]))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    root = next(n.input[0] for n in gd.node if n.name == "out")
    node = out.graph[replacement_of(out.graph, TensorRef(root)).node]
    assert node.op == "LayerNorm"
    assert str(node.inputs[0]) == ("Reshape" if name == "keras_fused_two_axes" else "add")
    assert node.attrs["begin_norm_axis"].i in (-1, 2)
    feeds = {"a": rand(2, 3, 8), "b": rand(2, 3, 8, seed=1)}
    init = ["init"] if any(n.name == "init" for n in gd.node) else []
    before, after = fx.compare(gd, out, root, feeds, init)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def _eps_outside_sqrt(x):  # (x - mean) / (sqrt(var) + eps): different math
    import tensorflow as tf

    gamma, beta = _params()
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) / (tf.sqrt(variance) + 1e-6) * gamma + beta


def _other_mean(x):  # the variance is taken around another tensor's mean
    import tensorflow as tf

    gamma, beta = _params()
    mean = tf.reduce_mean(x, axis=[-1], keepdims=True)
    other = tf.reduce_mean(x * 2.0, axis=[-1], keepdims=True)
    variance = tf.reduce_mean(tf.square(x - other), axis=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(variance + 1e-6) * gamma + beta


def _not_squared(x):  # abs instead of square
    import tensorflow as tf

    gamma, beta = _params()
    mean = tf.reduce_mean(x, axis=[-1], keepdims=True)
    variance = tf.reduce_mean(tf.abs(x - mean), axis=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(variance + 1e-6) * gamma + beta


def _leading_axis(x):  # normalised over axis 1 of a rank-3 tensor
    import tensorflow as tf

    gamma, beta = _params()
    mean, variance = tf.nn.moments(x, axes=[1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(variance + 1e-6) * gamma + beta


def _fused_bn_scaled(x):  # Keras's fused-batch-norm layer norm, but with scale 2, not ones
    import tensorflow as tf

    gamma, beta = _params()
    shape = tf.shape(x)
    rows, cols = tf.reduce_prod(shape[:2]), tf.reduce_prod(shape[2:])
    flat = tf.reshape(x, [1, rows, cols, 1])
    y, _, _ = tf.compat.v1.nn.fused_batch_norm(
        flat, scale=tf.fill([rows], 2.0), offset=tf.zeros([rows]), epsilon=1e-3, data_format="NCHW"
    )
    return tf.reshape(y, shape) * gamma + beta


def _scalar_gamma(x):  # normalised, then * 2.0 + 0.5: scalars are not LayerNorm's params
    import tensorflow as tf

    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(variance + 1e-6) * 2.0 + 0.5


@pytest.mark.parametrize(
    "fn",
    [_eps_outside_sqrt, _other_mean, _not_squared, _leading_axis, _fused_bn_scaled, _scalar_gamma],
    ids=[
        "eps_outside_sqrt",
        "other_mean",
        "abs",
        "leading_axis",
        "fused_bn_scale_2",
        "scalar_gamma",
    ],
)
def test_near_miss_forms_do_not_fire(fx, fn) -> None:
    assert fx.fuse(fx.graph_def(lambda: ln_form(fn))).stats[RULE] == 0


def test_stacked_layer_norms_both_fuse(fx, rand) -> None:
    """The second norm's input reads the first's LayerNorm: its rank must still be known."""
    import tensorflow as tf

    def build() -> None:
        x = _inputs()
        h = _contrib(x)
        tf.identity(_contrib(h + x), name="out")
        tf.compat.v1.global_variables_initializer()

    gd = fx.graph_def(build)
    out = fx.fuse(gd)
    assert out.stats[RULE] == 2
    root = next(n.input[0] for n in gd.node if n.name == "out")
    feeds = {"a": rand(2, 3, 8), "b": rand(2, 3, 8, seed=1)}
    before, after = fx.compare(gd, out, root, feeds, ["init"])
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


# --- training graphs (issue 23): the gradient TF built for the pattern becomes LayerNormGrad --


def _trainable_params():
    import tensorflow as tf

    rng = np.random.default_rng(6)
    gamma = tf.compat.v1.get_variable("gamma", initializer=rng.uniform(0.5, 1.5, 8).astype("f"))
    beta = tf.compat.v1.get_variable("beta", initializer=rng.standard_normal(8).astype("f"))
    return gamma, beta


def _training_loss(fn, residual: bool):
    """``fn``'s layer norm of a trainable input, then a fixed projection (and a residual)."""
    import tensorflow as tf

    rng = np.random.default_rng(2)
    x = tf.compat.v1.get_variable("x", initializer=rng.standard_normal((2, 3, 8)).astype("f"))
    h = tf.compat.v1.placeholder_with_default(x * 2.0 + 0.5, [None, 3, 8])  # dynamic batch
    y = fn(h)
    if residual:  # h is read outside the pattern too: its gradient sums both
        y = y + h
    weights = tf.constant(rng.standard_normal((8,)).astype("f"))
    return tf.reduce_sum(tf.tanh(y) * weights)


TRAINED_LN = ["contrib_bert_albert_xlnet", "keras", "t2t", "gpt2", "moments_rsqrt", "div_sqrt",
              "scale_first"]  # fmt: skip


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("name", TRAINED_LN)
def test_each_form_fuses_in_a_training_graph_with_its_gradient(
    fx, monkeypatch, name: str, optimizer: str
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "_params", _trainable_params)
    trained = fx.train(lambda: _training_loss(LN_FORMS[name], residual=True), optimizer=optimizer)
    assert trained.outcome.stats[RULE] == 1
    graph = trained.outcome.graph
    [grad] = [n for n in graph if n.op == "LayerNormGrad"]
    [fwd] = [n for n in graph if n.op == "LayerNorm"]
    # dy, x, variance, mean, gamma: the statistics are the forward op's outputs 2 and 1
    assert [str(r) for r in grad.inputs[1:4]] == [
        str(fwd.inputs[0]),
        f"{fwd.name}:2",
        f"{fwd.name}:1",
    ]
    assert grad.inputs[4] == fwd.inputs[1]
    assert grad.attrs["epsilon"].f == fwd.attrs["epsilon"].f
    # x's gradient: the residual's contribution plus pd_x, in a new AddN
    [total] = [n for n in graph if n.op == "AddN" and SUPERSEDED not in n.meta
               and f"{grad.name}" in [str(r) for r in n.inputs]]  # fmt: skip
    assert len(total.inputs) == 2
    # every gradient op TF built for the pattern is superseded, by this rule
    for node in graph:
        if node.name.startswith("gradients/") and any(
            node.name.startswith(f"gradients/{p}_grad/") for p in _pattern_nodes(graph, fwd)
        ):
            assert node.meta[SUPERSEDED].rule == RULE, node.name
    trained.assert_same()


def _pattern_nodes(graph, fused) -> list[str]:
    return [n.name for n in graph if SUPERSEDED in n.meta and n.meta[SUPERSEDED].rule == RULE
            and not n.name.startswith("gradients/") and n.origin == ()]  # fmt: skip


def test_the_gradient_of_gamma_and_beta_feeds_the_optimizer(fx, monkeypatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "_params", _trainable_params)
    trained = fx.train(lambda: _training_loss(_gpt2, residual=False), resource=True)
    graph = trained.outcome.graph
    [grad] = [n for n in graph if n.op == "LayerNormGrad"]
    readers = {u.op: [str(r) for r in u.inputs] for u in graph.consumers(grad)}
    assert (
        f"{grad.name}:1" in readers["ResourceApplyAdam"]
        or f"{grad.name}:2" in readers["ResourceApplyAdam"]
    )
    appliers = [u for u in graph.consumers(grad) if u.op == "ResourceApplyAdam"]
    assert len(appliers) == 2  # gamma's and beta's
    # the gradient tensors TF built keep their names: each resolves to what replaced it
    handed = {
        old: new
        for n in graph
        if SUPERSEDED in n.meta and n.name.startswith("gradients/")
        for old, new in n.meta[SUPERSEDED].outputs.items()
    }
    assert set(handed.values()) == {grad.output(1), grad.output(2), grad.output(0)}
    for old in handed:
        assert replacement_of(graph, old).node == grad.name
    assert grad.origin[0] in {ref.node for ref in handed}  # named after a tensor it carries
    # x's whole gradient is pd_x: the AddN that summed the pattern's contributions is replaced
    assert any(str(r) == grad.name for u in graph.consumers(grad) for r in u.inputs)
    trained.assert_same()


def test_a_second_non_gradient_reader_of_an_intermediate_blocks_the_training_fusion(
    fx, monkeypatch
) -> None:
    import tensorflow as tf

    def build():
        loss = _training_loss(_gpt2, residual=False)
        rsqrt = next(op for op in tf.compat.v1.get_default_graph().get_operations()
                     if op.type == "Rsqrt")  # fmt: skip
        return loss + tf.reduce_sum(rsqrt.outputs[0])

    monkeypatch.setattr(sys.modules[__name__], "_params", _trainable_params)
    trained = fx.train(build, steps=1)
    assert trained.outcome.stats[RULE] == 0
    trained.assert_same()
