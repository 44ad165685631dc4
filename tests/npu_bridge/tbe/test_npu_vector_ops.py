"""npu_vector_ops: the fused LAMB ops compute the unfused LAMB step and assign in place."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.tbe import npu_vector_ops  # noqa: E402

pytestmark = pytest.mark.tf

GRAD = np.array([0.5, -1.0, 2.0], np.float32)
PARAM = np.array([1.0, 2.0, -3.0], np.float32)
V0 = np.array([0.1, 0.2, 0.3], np.float32)
M0 = np.array([0.01, -0.02, 0.03], np.float32)
B1, B2, EPS, STEP, DECAY, LR = 0.9, 0.999, 1e-6, 3.0, 0.01, 0.1


def _expected() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    v = V0 * B2 + GRAD**2 * (1 - B2)
    m = M0 * B1 + GRAD * (1 - B1)
    update = (m / (1 - B1**STEP)) / (np.sqrt(v / (1 - B2**STEP)) + EPS) + PARAM * DECAY
    ratio = np.linalg.norm(PARAM) / np.linalg.norm(update)
    return update, v, m, PARAM - ratio * LR * update


def test_optimizer_and_weight_assign_follow_the_lamb_formulas() -> None:
    with tf.Graph().as_default():
        grad = tf.constant(GRAD)
        v = tf.compat.v1.Variable(V0)
        m = tf.compat.v1.Variable(M0)
        param = tf.compat.v1.Variable(PARAM)
        update, next_v, next_m = npu_vector_ops.lamb_apply_optimizer_assign(
            grad, v, m, param, B1, 1 - B1, B2, 1 - B2, EPS, STEP, 1.0, DECAY
        )
        w_norm, g_norm = tf.norm(param), tf.norm(update)
        step = npu_vector_ops.lamb_apply_weight_assign(w_norm, g_norm, LR, update, param)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            got_update, got_v, got_m = sess.run([update, next_v, next_m])
            assert sess.run(v) == pytest.approx(got_v) and sess.run(m) == pytest.approx(got_m)
            sess.run(tf.compat.v1.assign(v, V0))
            sess.run(tf.compat.v1.assign(m, M0))
            sess.run(step)
            new_param = sess.run(param)
    update_ref, v_ref, m_ref, param_ref = _expected()
    np.testing.assert_allclose(got_update, update_ref, rtol=1e-5)
    np.testing.assert_allclose(got_v, v_ref, rtol=1e-6)
    np.testing.assert_allclose(got_m, m_ref, rtol=1e-6)
    np.testing.assert_allclose(new_param, param_ref, rtol=1e-5)


def test_trust_ratio_is_one_when_a_norm_is_zero() -> None:
    with tf.Graph().as_default():
        param = tf.compat.v1.Variable([1.0, 1.0])
        step = npu_vector_ops.lamb_apply_weight_assign(0.0, 2.0, 0.5, [2.0, 4.0], param)
        with tf.compat.v1.Session() as sess:
            sess.run(param.initializer)
            assert sess.run(step).tolist() == [0.0, -1.0]


def test_eager_calls_are_refused() -> None:
    with pytest.raises(RuntimeError, match="not compatible with eager execution"):
        npu_vector_ops.lamb_apply_weight_assign(1.0, 1.0, 0.1, [1.0], None)
