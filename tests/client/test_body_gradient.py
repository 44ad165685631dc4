"""body_gradient: one <Op>BodyGrad call per differentiated op, equal to autodiff of the math."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.client.ops import emit
from tf2npu.graph.npu_ops.lstm import lstm_gates

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(17)
X = RNG.standard_normal((2, 3)).astype(np.float32)
H = RNG.standard_normal((2, 4)).astype(np.float32)
C = RNG.standard_normal((2, 4)).astype(np.float32)
W = (RNG.standard_normal((7, 16)) * 0.5).astype(np.float32)
B = (RNG.standard_normal(16) * 0.1).astype(np.float32)


def test_basic_lstm_cell_gradient_equals_autodiff_of_the_same_math() -> None:
    with tf.Graph().as_default() as graph:
        args = [tf.constant(a) for a in (X, H, C, W, B)]
        ct, ht = emit("BasicLSTMCell", args, {"forget_bias": 0.5})[:2]
        ours = tf.gradients(ht * 2.0 + ct, args)
        i, j, f, o = lstm_gates(args[0], args[1], args[3], args[4], 0.5)
        ref_c = f * args[2] + i * j
        ref = tf.gradients(o * tf.tanh(ref_c) * 2.0 + ref_c, args)
        calls = [op for op in graph.get_operations() if op.name.endswith("BasicLSTMCellBodyGrad")]
        with tf.compat.v1.Session() as session:
            got, want = session.run([ours, ref])
    assert len(calls) == 1 and calls[0].type.startswith("BasicLSTMCellBodyGrad_DT_FLOAT_")
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_integer_inputs_get_no_gradient_and_unused_outputs_count_as_zero() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.constant(RNG.standard_normal((3, 2, 3)).astype(np.float32))
        w, b = tf.constant(np.zeros((7, 16), np.float32) + 0.1), tf.constant(B)
        lengths = tf.constant([3, 1])
        zeros = tf.zeros([1, 2, 4])
        outputs = emit("DynamicRnn", [x, w, b, lengths, zeros, zeros])
        # Only the gate output i is used: the other seven outputs' gradients are zeros.
        grads = tf.gradients(tf.reduce_sum(outputs[3]), [x, w, lengths])
        second = emit("DynamicRnn", [x, w, b, lengths, zeros, zeros])[0]
        dx_second = tf.gradients(tf.reduce_sum(second), x)[0]
        names = [f.signature.name for f in graph.as_graph_def().library.function]
        # One gradient function (and the loops it calls) for both ops: same dtype and attrs.
        functions = [n for n in names if n.startswith("DynamicRnnBodyGrad_") and "while" not in n]
        with tf.compat.v1.Session() as session:
            dx, dw, _ = session.run([*grads[:2], dx_second])
    assert grads[2] is None
    assert np.abs(dx).sum() > 0 and np.abs(dw).sum() > 0
    assert len(functions) == 1


@pytest.mark.slow
def test_a_gathered_output_gives_an_indexed_slices_gradient_made_dense() -> None:
    # The gradient of tf.gather(outputs[0], T - 1) (an RNN's last step) is IndexedSlices.
    xs = RNG.standard_normal((3, 2, 3)).astype(np.float32)
    ws = (RNG.standard_normal((7, 16)) * 0.5).astype(np.float32)
    with tf.Graph().as_default():
        x, w, b = tf.constant(xs), tf.constant(ws), tf.constant(B)
        zeros = tf.zeros([1, 2, 4])
        y = emit("DynamicRnn", [x, w, b, tf.constant([3, 3]), zeros, zeros])[0]
        gathered = tf.gradients(tf.reduce_sum(tf.gather(y, 2) * 3.0), [x, w])
        sliced = tf.gradients(tf.reduce_sum(y[2] * 3.0), [x, w])
        with tf.compat.v1.Session() as session:
            got, want = session.run([gathered, sliced])
    for g, w_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w_, rtol=1e-6, atol=1e-7)
    assert np.abs(got[1]).sum() > 0
