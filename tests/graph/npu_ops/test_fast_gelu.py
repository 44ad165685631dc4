"""FastGelu and FastGeluGrad against literal references: the documented formulas, numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.npu_ops.opdef import DT_FLOAT, DT_HALF

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

X = np.array([-90.0, -6.0, -1.5, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0, 2.5, 9.0, 90.0], np.float32)


def _sigmoid_form(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-1.702 * x))


def test_fast_gelu_is_x_sigmoid_1702x(run_op) -> None:
    (y,) = run_op("FastGelu", [X], DT_FLOAT)
    x = X.astype(np.float64)
    np.testing.assert_allclose(y, _sigmoid_form(x), rtol=1e-6, atol=1e-7)
    assert y[X == 1.0][0] == pytest.approx(0.845796, abs=1e-6)
    assert y[0] == 0.0 and y[-1] == 90.0  # no overflow at either end


def test_fast_gelu_half_computes_in_half(run_op) -> None:
    (y,) = run_op("FastGelu", [X[1:-1].astype(np.float16)], DT_HALF)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float32), _sigmoid_form(X[1:-1]), atol=3e-3, rtol=3e-3)


def test_fast_gelu_grad_equals_tf_gradients_of_the_sigmoid_form(run_op) -> None:
    x = X[1:-1]
    dy = np.linspace(-2.0, 2.0, x.size).astype(np.float32)
    (z,) = run_op("FastGeluGrad", [dy, x], DT_FLOAT)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = xt * tf.sigmoid(1.702 * xt)
    expected = tape.gradient(out, xt, output_gradients=tf.constant(dy)).numpy()
    np.testing.assert_allclose(z, expected, rtol=1e-5, atol=1e-6)


def test_fast_gelu_grad_matches_the_documented_formula_at_literals(run_op) -> None:
    (z,) = run_op(
        "FastGeluGrad", [np.ones(3, np.float32), np.array([0.0, 1.0, -90.0], np.float32)], DT_FLOAT
    )
    e = np.exp(-1.702)
    assert z[0] == pytest.approx(0.5)
    assert z[1] == pytest.approx((e + 1.702 * e + 1.0) / (e + 1.0) ** 2, rel=1e-6)
    assert z[2] == pytest.approx(0.0, abs=1e-30)
