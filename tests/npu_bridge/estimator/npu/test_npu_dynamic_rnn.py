"""npu_dynamic_rnn: the layers equal TF's own LSTM and GRU, differentiate, and refuse what the
device kernels cannot compute."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu.npu_dynamic_rnn import (  # noqa: E402
    DynamicAUGRU,
    DynamicGRUV2,
    DynamicRNN,
)

pytestmark = pytest.mark.tf

T, B, IN, H = 4, 3, 2, 5
RNG = np.random.default_rng(5)
X = RNG.standard_normal((T, B, IN)).astype(np.float32)
LENGTHS = np.array([4, 2, 1], np.int32)


def _run(fetches, copies=()):
    """Initialise, run the ``copies`` (assigns), then the ``fetches``."""
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(list(copies))
        return session.run(fetches)


@pytest.mark.slow
def test_dynamic_rnn_equals_tf_dynamic_rnn_with_basic_lstm_cell() -> None:
    with tf.Graph().as_default():
        x = tf.constant(X)
        layer = DynamicRNN(H, tf.float32, forget_bias=1.0)
        outputs = layer(x, seq_length=tf.constant(LENGTHS))
        cell = tf.compat.v1.nn.rnn_cell.BasicLSTMCell(H, forget_bias=1.0)
        ref_y, ref_state = tf.compat.v1.nn.dynamic_rnn(
            cell, x, sequence_length=LENGTHS, dtype=tf.float32, time_major=True
        )
        # The same kernel and bias fit both: the layouts are the same.
        kernel, bias = layer.trainable_weights
        copies = [cell.weights[0].assign(kernel), cell.weights[1].assign(bias)]
        y, h, c, want_y, want = _run([*outputs[:3], ref_y, ref_state], copies)
    assert len(outputs) == 8 and all(t.shape == (T, B, H) for t in outputs)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h[-1], want.h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c[-1], want.c, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_dynamic_gru_v2_equals_keras_gru_with_reset_after() -> None:
    with tf.Graph().as_default():
        x = tf.constant(X)
        layer = DynamicGRUV2(H, tf.float32)
        y, output_h = layer(x)[:2]
        gru = tf.keras.layers.GRU(H, return_sequences=True, time_major=True, reset_after=True)
        ref = gru(x)
        w_in, w_hid, b_in, b_hid = layer.trainable_weights
        kernel, recurrent, bias = gru.weights  # keras: gates z, r, h; bias [input; recurrent]
        copies = [
            kernel.assign(w_in),
            recurrent.assign(w_hid),
            bias.assign(tf.stack([b_in, b_hid])),
        ]
        got_y, got_h, want = _run([y, output_h, ref], copies)
    np.testing.assert_allclose(got_y, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_y, got_h)


def test_augru_with_attention_one_keeps_the_initial_state() -> None:
    # (1 - a)·z = 0: every step takes the candidate n, so h_t = n_t, never init_h.
    with tf.Graph().as_default():
        att = tf.ones([T, B])
        y, _, update, update_att, _, new, _ = DynamicAUGRU(H, tf.float32)(tf.constant(X), att)
        got_y, got_update_att, got_new, got_update = _run([y, update_att, new, update])
    assert not got_update_att.any() and got_update.all()
    np.testing.assert_allclose(got_y, got_new, rtol=1e-6)


def test_variables_have_the_adapter_names_and_shapes() -> None:
    with tf.Graph().as_default():
        DynamicRNN(H, tf.float32)(tf.constant(X))
        DynamicGRUV2(H, tf.float32)(tf.constant(X))
        DynamicAUGRU(H, tf.float32)(tf.constant(X), tf.zeros([T, B]))
        shapes = {v.name: v.shape.as_list() for v in tf.compat.v1.global_variables()}
        trainable = {v.name for v in tf.compat.v1.trainable_variables()}
    assert shapes == {
        "dynamic_rnn/dynamicbase/seq_length:0": [B],
        "dynamic_rnn/dynamicrnn/w:0": [IN + H, 4 * H],
        "dynamic_rnn/dynamicrnn/b:0": [4 * H],
        "dynamic_gruv2/dynamicbase/seq_length:0": [B],
        "dynamic_gruv2/dynamicgruv2/weight_input:0": [IN, 3 * H],
        "dynamic_gruv2/dynamicgruv2/weight_hidden:0": [H, 3 * H],
        "dynamic_gruv2/dynamicgruv2/bias_input:0": [3 * H],
        "dynamic_gruv2/dynamicgruv2/bias_hidden:0": [3 * H],
        "dynamic_augru/dynamicbase/seq_length:0": [B],
        "dynamic_augru/dynamicaugru/weight_input:0": [IN, 3 * H],
        "dynamic_augru/dynamicaugru/weight_hidden:0": [H, 3 * H],
        "dynamic_augru/dynamicaugru/bias_input:0": [3 * H],
        "dynamic_augru/dynamicaugru/bias_hidden:0": [3 * H],
    }
    assert not any("seq_length" in name for name in trainable)


def _directional_errors(build, shapes) -> list[tuple[float, float]]:
    """(analytic, central-difference) derivatives of L = Σ y·R along three random directions of
    all inputs at once; ``build(*placeholders)`` → y. Values and directions are seeded."""
    rng = np.random.default_rng(9)
    with tf.Graph().as_default():
        inputs = [tf.compat.v1.placeholder(tf.float32, shape) for shape in shapes]
        y = build(*inputs)
        loss = tf.reduce_sum(y * rng.standard_normal(y.shape.as_list()).astype(np.float32))
        grads = tf.gradients(loss, inputs)
        values = [rng.standard_normal(shape).astype(np.float32) * 0.5 for shape in shapes]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())

            def at(step: float, direction: list[np.ndarray]) -> float:
                moved = [v + step * d for v, d in zip(values, direction, strict=True)]
                return float(session.run(loss, dict(zip(inputs, moved, strict=True))))

            analytic = session.run(grads, dict(zip(inputs, values, strict=True)))
            results = []
            for _ in range(3):
                direction = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
                along = sum(float((g * d).sum()) for g, d in zip(analytic, direction, strict=True))
                eps = 5e-3
                results.append((along, (at(eps, direction) - at(-eps, direction)) / (2 * eps)))
            return results


def _assert_close(results: list[tuple[float, float]]) -> None:
    for analytic, numeric in results:
        assert analytic == pytest.approx(numeric, rel=2e-3, abs=2e-3)


@pytest.mark.slow
def test_dynamic_rnn_gradient_matches_finite_differences() -> None:
    def build(x, w, b, h0, c0):
        layer = DynamicRNN(3, tf.float32, forget_bias=0.5, cell_clip=2.0)
        y, _, c = layer(x, init_h=h0, init_c=c0, weight=w, bias=b)[:3]
        return y + c * 0.5

    shapes = [[T, B, IN], [IN + 3, 12], [12], [1, B, 3], [1, B, 3]]
    _assert_close(_directional_errors(build, shapes))


@pytest.mark.slow
def test_gru_and_augru_gradients_match_finite_differences() -> None:
    from tf2npu.client.ops import emit

    def gru(x, w_in, w_hid, b_in, b_hid, h0):
        inputs = [x, w_in, w_hid, b_in, b_hid, LENGTHS, h0]
        output_h = emit("DynamicGruV2", inputs, {"gate_order": "rzh"})[1]
        output_h.set_shape([T, B, 3])  # the raw op leaves its shapes to the layer
        return output_h

    def augru(x, att, h0):
        return DynamicAUGRU(3, tf.float32)(x, att, init_h=h0)[0]

    _assert_close(_directional_errors(gru, [[T, B, IN], [IN, 9], [3, 9], [9], [9], [B, 3]]))
    _assert_close(_directional_errors(augru, [[T, B, IN], [T, B], [B, 3]]))


def test_basic_lstm_cell_gradient_matches_finite_differences() -> None:
    from npu_bridge.estimator import npu_ops

    def build(x, h, c, w, b):
        ct, ht = npu_ops.basic_lstm_cell(x, h, c, w, b, 1.0, 1.0, True, "tanh")[:2]
        return ct + ht

    _assert_close(_directional_errors(build, [[B, IN], [B, 3], [B, 3], [IN + 3, 12], [12]]))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: DynamicRNN(H, tf.float32, direction="BIDIRECTIONAL"),
            r"direction='BIDIRECTIONAL' is not supported .* tf\.reverse\(x, \[0\]\)",
        ),
        (
            lambda: DynamicRNN(H, tf.float32, direction="SIDEWAYS"),
            r"invalid direction 'SIDEWAYS', expecting 'UNIDIRECTIONAL' or 'BIDIRECTIONAL'",
        ),
        (
            lambda: DynamicRNN(H, tf.float32, time_major=False),
            r"time_major=False is not supported .* transpose the inputs",
        ),
        (lambda: DynamicRNN(H, tf.float32, use_peephole=True), r"use_peephole=True"),
        (lambda: DynamicRNN(H, tf.float32, keep_prob=0.9), r"npu_ops\.dropout"),
        (lambda: DynamicRNN(H, tf.float32, cell_type="GRU"), r"cell_type='GRU'"),
        (lambda: DynamicGRUV2(H, tf.float32, num_proj=2), r"num_proj=2 .* dense layer"),
        (lambda: DynamicGRUV2(H, tf.float32, cell_clip=3.0), r"cell_clip=3\.0"),
        (lambda: DynamicGRUV2(H, tf.float32, gate_order="hzr"), r"gate_order='hzr'"),
        (lambda: DynamicGRUV2(H, tf.float32, reset_after=False), r"reset_after=True"),
    ],
)
def test_what_the_device_cannot_compute_is_refused(make, message: str) -> None:
    with tf.Graph().as_default(), pytest.raises(ValueError, match=message):
        make()(tf.constant(X))


def test_inputs_must_be_time_major_rank_3_with_known_input_size() -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"must be time-major \[time, batch, input\]"):
            DynamicRNN(H, tf.float32)(tf.constant(X[0]))
        unknown = tf.compat.v1.placeholder(tf.float32, [T, B, None])
        with pytest.raises(ValueError, match=r"input size known"):
            DynamicGRUV2(H, tf.float32)(unknown)


def test_inputs_of_another_dtype_than_the_layer_are_a_type_error() -> None:
    with tf.Graph().as_default(), pytest.raises(TypeError, match=r"input 'w' is float32"):
        DynamicRNN(H, tf.float32)(tf.constant(X.astype(np.float16)))


def test_float16_layers_compute_in_float16_dtype() -> None:
    with tf.Graph().as_default():
        y = DynamicRNN(H, tf.float16)(tf.constant(X.astype(np.float16)))[0]
        got = _run(y)
    assert y.dtype == tf.float16 and got.dtype == np.float16 and np.isfinite(got).all()


def test_eager_execution_is_refused() -> None:
    with pytest.raises(RuntimeError, match=r"only be built in a graph"):
        DynamicRNN(H, tf.float32)(tf.constant(X))
