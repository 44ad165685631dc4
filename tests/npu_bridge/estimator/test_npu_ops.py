"""npu_ops: dropout's checks, seeds, mask statistics and gradient; NPU system init/shutdown."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator import npu_ops  # noqa: E402
from tf2npu.graph.npu_ops.dropout import mask_bytes  # noqa: E402

pytestmark = pytest.mark.tf

N = 100_000


def _mask_and_output(out: object) -> tuple[object, object]:
    do_mask = out.op  # type: ignore[attr-defined]
    return do_mask.inputs[1], do_mask


def test_python_keep_prob_one_returns_x_itself() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [3])
        before = len(graph.get_operations())
        assert npu_ops.dropout(x, 1.0) is x
        assert len(graph.get_operations()) == before


def test_int_keep_prob_one_and_tensor_keep_prob_still_emit_the_ops() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [3])
        by_int = npu_ops.dropout(x, 1)  # only a float 1.0 short-cuts; an int keeps every element
        by_tensor = npu_ops.dropout(x, tf.compat.v1.placeholder_with_default(0.5, []))
        with tf.compat.v1.Session(graph=graph) as session:
            kept = session.run(by_int, {x: [1.0, -2.0, 3.0]})
    assert by_int is not x and by_int.op.get_attr("_npu_op") == b"DropOutDoMask"
    assert kept.tolist() == [1.0, -2.0, 3.0]
    assert by_tensor.op.get_attr("_npu_op") == b"DropOutDoMask"


def test_keep_prob_of_unknown_shape_keeps_x_static_shape() -> None:
    # Scripts feed keep_prob through a shapeless placeholder; DropOutDoMask's output has x's
    # shape on the device, and layers built on it (Dense) need at least the last dimension.
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [None, 8])
        keep_prob = tf.compat.v1.placeholder(tf.float32)
        out = npu_ops.dropout(x, keep_prob)
        grad = tf.gradients(tf.reduce_sum(out), x)[0]
        with tf.compat.v1.Session(graph=graph) as session:
            value = session.run(out, {x: np.ones([2, 8]), keep_prob: 1.0})
    assert out.shape.as_list() == [None, 8]
    assert grad.shape.as_list() == [None, 8]
    assert value.tolist() == np.ones([2, 8]).tolist()


def test_half_keeps_about_half_and_scales_the_rest_by_two() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [N])
        out = npu_ops.dropout(x, 0.5)
        mask, _ = _mask_and_output(out)
        values = np.arange(1, N + 1, dtype=np.float32)
        with tf.compat.v1.Session(graph=graph) as session:
            y, bits = session.run([out, mask], {x: values})
    kept = y != 0
    np.testing.assert_array_equal(y[kept], 2.0 * values[kept])
    assert bits.shape == (mask_bytes(N),) and bits.dtype == np.uint8
    ones = int(np.unpackbits(bits).sum())
    assert ones == int(kept.sum())
    assert abs(ones / N - 0.5) < 0.01


def test_gradient_is_zero_exactly_where_the_output_is() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [4096])
        out = npu_ops.dropout(x, 0.8)
        (dx,) = tf.gradients(out, x)
        with tf.compat.v1.Session(graph=graph) as session:
            y, grad = session.run([out, dx], {x: np.ones(4096, np.float32)})
    assert ((y == 0) == (grad == 0)).all()
    np.testing.assert_allclose(grad[grad != 0], 1.25)
    assert 0 < np.count_nonzero(y == 0) < 4096


def _first_mask(seed: int | None, graph_seed: int | None = None) -> np.ndarray:
    with tf.Graph().as_default() as graph:
        if graph_seed is not None:
            tf.compat.v1.set_random_seed(graph_seed)
        out = npu_ops.dropout(tf.ones([2048]), 0.5, seed=seed)
        with tf.compat.v1.Session(graph=graph) as session:
            first = session.run(out)
            assert not np.array_equal(session.run(out), first)  # each run draws a new mask
            return first


def test_seeded_dropout_is_reproducible_across_fresh_graphs_and_sessions() -> None:
    np.testing.assert_array_equal(_first_mask(seed=7), _first_mask(seed=7))
    np.testing.assert_array_equal(_first_mask(None, graph_seed=3), _first_mask(None, graph_seed=3))
    assert not np.array_equal(_first_mask(seed=7), _first_mask(seed=8))


@pytest.mark.parametrize(
    ("graph_seed", "seed", "expected"),
    [
        (None, None, (0, 0)),  # nondeterministic
        (None, 7, (npu_ops.DEFAULT_GRAPH_SEED, 7)),
        (5, 7, (5, 7)),
        (0, 0, (0, 2**31 - 1)),  # (0, 0) would mean nondeterministic: TF avoids it
    ],
)
def test_seeds_are_resolved_like_tensorflow(graph_seed, seed, expected) -> None:
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.compat.v1.set_random_seed(graph_seed)
        out = npu_ops.dropout(tf.ones([4]), 0.5, seed=seed)
    gen = _mask_and_output(out)[0].op
    assert (gen.get_attr("_npu_attr_seed"), gen.get_attr("_npu_attr_seed2")) == expected


def test_graph_seed_alone_uses_the_graph_op_count_as_op_seed() -> None:
    with tf.Graph().as_default() as graph:
        tf.compat.v1.set_random_seed(5)
        x = tf.ones([4])
        expected = (5, len(graph.get_operations()))
        assert npu_ops.get_seed(None) == expected
        gen = _mask_and_output(npu_ops.dropout(x, 0.5))[0].op
    assert (gen.get_attr("_npu_attr_seed"), gen.get_attr("_npu_attr_seed2")) == expected


def test_node_names_follow_the_generated_wrappers() -> None:
    with tf.Graph().as_default():
        x = tf.ones([4])
        default = npu_ops.dropout(x, 0.5)
        named = npu_ops.dropout(x, 0.5, name="drop")
    assert (_mask_and_output(default)[0].op.name, default.op.name) == (
        "DropOutGenMask",
        "DropOutDoMask",
    )
    assert (_mask_and_output(named)[0].op.name, named.op.name) == ("drop", "drop_1")


def test_half_input_with_python_keep_prob() -> None:
    with tf.Graph().as_default() as graph:
        out = npu_ops.dropout(tf.ones([256], tf.float16), 0.5, seed=1)
        with tf.compat.v1.Session(graph=graph) as session:
            y = session.run(out)
    assert out.dtype == tf.float16 and set(np.unique(y)) == {0.0, 2.0}


def test_noise_shape_fills_unknown_dims_from_x_and_must_cover_x() -> None:
    with tf.Graph().as_default():
        x = tf.ones([4, 8])
        out = npu_ops.dropout(x, 0.5, noise_shape=[None, 8])
        shape = _mask_and_output(out)[0].op.inputs[0]
        assert tf.get_static_value(shape).tolist() == [4, 8]
        with pytest.raises(
            ValueError,
            match=r"noise_shape=\[4, 1\] has 4 elements but x \(4, 8\) "
            r"has 32; the NPU dropout does not broadcast",
        ):
            npu_ops.dropout(x, 0.5, noise_shape=[4, 1])
        y = tf.compat.v1.placeholder(tf.float32, [None, 8])
        with pytest.raises(ValueError, match=r"noise_shape=\[None, 8\] has unknown dimensions"):
            npu_ops.dropout(y, 0.5, noise_shape=[None, 8])


@pytest.mark.parametrize("keep_prob", [0, 0.0, 1.5, -0.1])
def test_keep_prob_outside_the_interval_is_refused(keep_prob) -> None:
    with (
        tf.Graph().as_default(),
        pytest.raises(
            ValueError,
            match=rf"npu_ops.dropout: keep_prob={keep_prob!r} is outside \(0, 1\]; give the "
            r"probability of KEEPING an element, e.g. 0.9",
        ),
    ):
        npu_ops.dropout(tf.ones([2]), keep_prob)


def test_integer_x_is_refused() -> None:
    with (
        tf.Graph().as_default(),
        pytest.raises(ValueError, match=r"x is a int32 tensor; it must be floating point"),
    ):
        npu_ops.dropout(tf.constant([1, 2]), 0.5)


def test_eager_calls_are_refused() -> None:
    from tensorflow.python.eager import context

    with context.eager_mode():
        with pytest.raises(RuntimeError, match=r"npu_ops.dropout is not compatible with eager"):
            npu_ops.dropout(tf.ones([2]), 0.5)
        with pytest.raises(RuntimeError, match=r"npu_ops.initialize_system is not compatible"):
            npu_ops.initialize_system()
        with pytest.raises(RuntimeError, match=r"npu_ops.shutdown_system is not compatible"):
            npu_ops.shutdown_system()


def test_system_ops_are_marked_no_ops_that_run() -> None:
    with tf.Graph().as_default() as graph:
        init, shutdown = npu_ops.initialize_system(), npu_ops.shutdown_system()
        named = npu_ops.NPUInit(name="my_init")
        with tf.compat.v1.Session(graph=graph) as session:
            session.run([init, shutdown, named])
    assert (init.type, init.name, init.get_attr("_npu_op")) == ("NoOp", "NPUInit", b"NPUInit")
    assert (shutdown.name, shutdown.get_attr("_npu_op")) == ("NPUShutdown", b"NPUShutdown")
    assert named.name == "my_init"


# --- basic_lstm_cell, LARS, LARSV2 ---

LSTM_RNG = np.random.default_rng(21)
LSTM_X = LSTM_RNG.standard_normal((2, 3)).astype(np.float32)
LSTM_H = LSTM_RNG.standard_normal((2, 4)).astype(np.float32)
LSTM_C = LSTM_RNG.standard_normal((2, 4)).astype(np.float32)
LSTM_W = (LSTM_RNG.standard_normal((7, 16)) * 0.5).astype(np.float32)
LSTM_B = (LSTM_RNG.standard_normal(16) * 0.1).astype(np.float32)


def test_basic_lstm_cell_equals_tf_basic_lstm_cell_bit_for_bit() -> None:
    with tf.Graph().as_default():
        args = [tf.constant(a) for a in (LSTM_X, LSTM_H, LSTM_C, LSTM_W, LSTM_B)]
        outputs = npu_ops.basic_lstm_cell(
            *args, keep_prob=1.0, forget_bias=1.0, state_is_tuple=True, activation="tanh"
        )
        cell = tf.compat.v1.nn.rnn_cell.BasicLSTMCell(4, forget_bias=1.0)
        new_h, state = cell(args[0], tf.compat.v1.nn.rnn_cell.LSTMStateTuple(args[2], args[1]))
        with tf.compat.v1.Session() as session:
            session.run([cell.weights[0].assign(LSTM_W), cell.weights[1].assign(LSTM_B)])
            got, want_h, want_c = session.run([outputs, new_h, state.c])
    ct, ht, it, jt, ft, ot, tanhct = got
    assert all(t.shape == (2, 4) for t in outputs)
    np.testing.assert_array_equal(ht, want_h)
    np.testing.assert_array_equal(ct, want_c)
    np.testing.assert_allclose(ht, ot * tanhct, rtol=1e-6)
    np.testing.assert_allclose(ct, ft * LSTM_C + it * jt, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keep_prob": 0.5}, r"keep_prob=0\.5.*only keep_prob=1\.0 and activation='tanh'"),
        ({"activation": "relu"}, r"activation='relu'"),
        ({"w": LSTM_W[:6]}, r"w has 6 rows but x and h have 3 \+ 4 columns"),
        ({"b": LSTM_B[:12]}, r"must have 4 \* hidden = 16 columns"),
        ({"x": LSTM_X[0]}, r"x has shape \(3,\); it must have rank 2"),
    ],
)
def test_basic_lstm_cell_refuses_what_it_cannot_compute(kwargs: dict, message: str) -> None:
    args = {
        "x": LSTM_X,
        "h": LSTM_H,
        "c": LSTM_C,
        "w": LSTM_W,
        "b": LSTM_B,
        "keep_prob": 1.0,
        "forget_bias": 1.0,
        "state_is_tuple": True,
        "activation": "tanh",
        **kwargs,
    }
    with tf.Graph().as_default(), pytest.raises(ValueError, match=message):
        npu_ops.basic_lstm_cell(**args)


def _lars_np(w, g, wd, lr=1.0, hyper=0.001, eps=1e-5, clip=False):
    w, g = w.astype(np.float64), g.astype(np.float64)
    coeff = hyper * np.linalg.norm(w) / (np.linalg.norm(g) + wd * np.linalg.norm(w) + eps)
    if clip:
        coeff = min(max(coeff / lr, 0.0), 1.0)
    return coeff * (g + wd * w)


def test_lars_scales_each_gradient_by_its_trust_ratio() -> None:
    ws = [LSTM_W, LSTM_B]
    gs = [LSTM_W * 0.01 + 0.003, LSTM_B * -2.0]
    with tf.Graph().as_default() as graph:
        out = npu_ops.LARS(
            [tf.constant(w) for w in ws],
            [tf.constant(g) for g in gs],
            weight_decay=1e-4,
            hyperpara=0.002,
            epsilon=1e-6,
        )
        ops = [
            op.get_attr("_npu_op") for op in graph.get_operations() if "_npu_op" in op.node_def.attr
        ]
        with tf.compat.v1.Session() as session:
            got = session.run(out)
    assert ops == [b"LarsV2", b"LarsV2"]
    assert [t.shape for t in out] == [w.shape for w in ws]
    for value, w, g in zip(got, ws, gs, strict=True):
        np.testing.assert_allclose(value, _lars_np(w, g, 1e-4, hyper=0.002, eps=1e-6), rtol=1e-5)


@pytest.mark.parametrize(("lr", "clip"), [(0.1, False), (0.1, True), (1e-5, True)])
def test_larsv2_matches_the_formula(lr: float, clip: bool) -> None:
    g = LSTM_W * 0.3
    with tf.Graph().as_default():
        out = npu_ops.LARSV2(
            LSTM_W, g, tf.constant(0.01), tf.constant(lr), hyperpara=0.01, use_clip=clip
        )
        with tf.compat.v1.Session() as session:
            got = session.run(out)
    want = _lars_np(LSTM_W, g, 0.01, lr, hyper=0.01, clip=clip)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    if lr == 1e-5:  # coeff / lr far above 1: clipped to exactly 1
        np.testing.assert_allclose(got, g + 0.01 * LSTM_W, rtol=1e-6)


def test_lars_refusals() -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"inputs_w has 2 tensors and inputs_g 1"):
            npu_ops.LARS([LSTM_W, LSTM_B], [LSTM_W], 0.1)
        with pytest.raises(ValueError, match=r"input_weight has shape \(7, 16\) but input_grad"):
            npu_ops.LARSV2(LSTM_W, LSTM_B, 0.1, 0.1)
        with pytest.raises(
            TypeError,
            match=r"NPU op LarsV2: input 'input_weight'.* is float16; "
            r"it takes float32",
        ):
            npu_ops.LARSV2(LSTM_W.astype(np.float16), LSTM_W.astype(np.float16), 0.1, 0.1)
    with pytest.raises(RuntimeError, match=r"npu_ops\.LARSV2 is not compatible with eager"):
        npu_ops.LARSV2(LSTM_W, LSTM_W, 0.1, 0.1)


class _NpuLSTMCell(tf.compat.v1.nn.rnn_cell.BasicLSTMCell):
    """TF's BasicLSTMCell with its step computed by npu_ops.basic_lstm_cell (Tacotron's use)."""

    def call(self, inputs, state):
        c, h = state
        ct, ht = npu_ops.basic_lstm_cell(
            inputs, h, c, self._kernel, self._bias, 1.0, self._forget_bias, True, "tanh"
        )[:2]
        return ht, tf.compat.v1.nn.rnn_cell.LSTMStateTuple(ct, ht)


@pytest.mark.parametrize("v2_loops", [True, False])
def test_basic_lstm_cell_differentiates_inside_a_while_loop(v2_loops: bool) -> None:
    x_value = LSTM_RNG.standard_normal((2, 5, 3)).astype(np.float32)
    results = []
    try:
        if not v2_loops:  # TF 1.15's loops, as under `tf2npu run`
            tf.compat.v1.disable_control_flow_v2()
        for cell_type in (_NpuLSTMCell, tf.compat.v1.nn.rnn_cell.BasicLSTMCell):
            with tf.Graph().as_default():
                x = tf.constant(x_value)
                out, _ = tf.compat.v1.nn.dynamic_rnn(cell_type(4), x, dtype=tf.float32)
                weights = tf.compat.v1.trainable_variables()
                grads = tf.gradients(tf.reduce_sum(out * out), [x, *weights])
                kernel, bias = tf.compat.v1.trainable_variables()
                with tf.compat.v1.Session() as session:
                    session.run([kernel.assign(LSTM_W), bias.assign(LSTM_B)])
                    results.append(session.run(grads))
    finally:
        tf.compat.v1.enable_control_flow_v2()
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
