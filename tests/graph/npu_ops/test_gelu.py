"""Gelu and GeluGrad against literal references: the TF composition, numpy, tf.gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2npu.graph.npu_ops.opdef import DT_FLOAT, DT_HALF

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

X = np.array([-6.0, -3.0, -1.5, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0, 2.5, 4.0, 9.0], np.float32)


def _tf_gelu(x: object) -> object:
    c = tf.constant(math.sqrt(2.0 / math.pi), tf.float32)
    return 0.5 * x * (1.0 + tf.tanh(c * (x + 0.044715 * x * x * x)))


def test_gelu_is_bit_exact_against_the_same_tf_composition(run_op) -> None:
    (y,) = run_op("Gelu", [X], DT_FLOAT)
    expected = tf.function(_tf_gelu)(tf.constant(X)).numpy()
    np.testing.assert_array_equal(y, expected)
    assert y.dtype == np.float32


def test_gelu_matches_numpy_formula(run_op) -> None:
    (y,) = run_op("Gelu", [X], DT_FLOAT)
    x = X.astype(np.float64)
    ref = 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)
    assert y[X == 0.0][0] == 0.0
    assert y[0] == pytest.approx(0.0, abs=1e-6) and y[-1] == pytest.approx(9.0)


def test_gelu_half_computes_in_half(run_op) -> None:
    (y,) = run_op("Gelu", [X.astype(np.float16)], DT_HALF)
    assert y.dtype == np.float16
    ref = 0.5 * X * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (X + 0.044715 * X**3)))
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=2e-3, atol=2e-3)


def test_gelu_grad_equals_tf_gradients_of_tanh_gelu(run_op) -> None:
    dy = np.linspace(-2.0, 2.0, X.size).astype(np.float32)
    y = tf.function(_tf_gelu)(tf.constant(X)).numpy()
    (z,) = run_op("GeluGrad", [dy, X, y], DT_FLOAT)
    xt = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = _tf_gelu(xt)
    expected = tape.gradient(out, xt, output_gradients=tf.constant(dy)).numpy()
    np.testing.assert_allclose(z, expected, rtol=1e-6, atol=1e-6)


def test_gelu_grad_ignores_y(run_op) -> None:
    dy = np.ones_like(X)
    (z1,) = run_op("GeluGrad", [dy, X, np.zeros_like(X)], DT_FLOAT)
    (z2,) = run_op("GeluGrad", [dy, X, np.full_like(X, 7.0)], DT_FLOAT)
    np.testing.assert_array_equal(z1, z2)
    assert z1[X == 0.0][0] == pytest.approx(0.5)
