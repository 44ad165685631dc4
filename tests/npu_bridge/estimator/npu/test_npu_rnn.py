"""npu_dynamic_rnn equals dynamic_rnn(time_major=True) with the same weights."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu.npu_rnn import npu_dynamic_rnn  # noqa: E402

pytestmark = [pytest.mark.tf, pytest.mark.filterwarnings("ignore:`tf.nn.rnn_cell:UserWarning")]

INPUTS = np.random.default_rng(0).normal(size=(5, 3, 4)).astype(np.float32)  # time, batch, depth


def run_both(make_cell, sequence_length=None):
    """(npu outputs, npu state, tf outputs, tf state), both built on one set of variables."""
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(1)
        inputs = tf.constant(INPUTS)
        cell = make_cell()
        with tf.compat.v1.variable_scope("model"):
            ours = npu_dynamic_rnn(cell, inputs, dtype=tf.float32, sequence_length=sequence_length)
        with tf.compat.v1.variable_scope("model", reuse=True):
            theirs = tf.compat.v1.nn.dynamic_rnn(
                cell, inputs, dtype=tf.float32, sequence_length=sequence_length, time_major=True
            )
        assert len(tf.compat.v1.trainable_variables()) == 2  # kernel and bias, shared
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run((ours, theirs))


def test_basic_rnn_matches_dynamic_rnn() -> None:
    (out, state), (ref_out, ref_state) = run_both(lambda: tf.compat.v1.nn.rnn_cell.BasicRNNCell(6))
    assert out.shape == (5, 3, 6)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state, ref_state, rtol=1e-5, atol=1e-6)


def test_lstm_with_sequence_length_matches_dynamic_rnn() -> None:
    (out, state), (ref_out, ref_state) = run_both(
        lambda: tf.compat.v1.nn.rnn_cell.LSTMCell(6), sequence_length=[5, 2, 3]
    )
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-6)
    assert np.all(out[2:, 1] == 0)  # past its length, sequence 1 outputs zeros
    np.testing.assert_allclose(state.c, ref_state.c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.h, ref_state.h, rtol=1e-5, atol=1e-6)


def test_initial_state_is_used() -> None:
    with tf.Graph().as_default():
        cell = tf.compat.v1.nn.rnn_cell.BasicRNNCell(2)
        zero = cell.zero_state(3, tf.float32)
        one = tf.ones([3, 2])
        _, from_zero = npu_dynamic_rnn(cell, INPUTS[:1], initial_state=zero)
        _, from_one = npu_dynamic_rnn(cell, INPUTS[:1], initial_state=one)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            a, b = sess.run((from_zero, from_one))
    assert not np.allclose(a, b)


def test_unknown_time_dimension_is_an_error() -> None:
    with tf.Graph().as_default():
        inputs = tf.compat.v1.placeholder(tf.float32, [None, 3, 4], name="x")
        cell = tf.compat.v1.nn.rnn_cell.BasicRNNCell(2)
        with pytest.raises(ValueError, match=r"npu_dynamic_rnn: inputs x:0 .* time dimension"):
            npu_dynamic_rnn(cell, inputs, dtype=tf.float32)
