"""LayerNorm against the mean/variance formula in numpy (float64 reference)."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.npu_ops.opdef import DT_FLOAT, DT_HALF

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(42)
X = (RNG.standard_normal((2, 3, 8)) * 3.0 + 1.5).astype(np.float32)


def _reference(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axis: int, eps: float):
    x64 = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x64.mean(axis=axes, keepdims=True)
    variance = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x64 - mean) / np.sqrt(variance + eps) * gamma + beta
    return y, mean, variance


@pytest.mark.parametrize(("norm_axis", "params_axis"), [(-1, -1), (2, 2), (1, 1), (1, 2)])
def test_layer_norm_matches_the_formula(run_op, norm_axis: int, params_axis: int) -> None:
    param_shape = X.shape[params_axis:]
    gamma = RNG.uniform(0.5, 2.0, param_shape).astype(np.float32)
    beta = RNG.uniform(-1.0, 1.0, param_shape).astype(np.float32)
    attrs = {"begin_norm_axis": norm_axis, "begin_params_axis": params_axis, "epsilon": 1e-5}
    y, mean, variance = run_op("LayerNorm", [X, gamma, beta], DT_FLOAT, attrs, outputs=3)
    ref_y, ref_mean, ref_var = _reference(X, gamma, beta, norm_axis, 1e-5)
    assert mean.shape == ref_mean.shape and variance.shape == ref_var.shape
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(variance, ref_var, rtol=1e-5)
    np.testing.assert_allclose(y, ref_y, rtol=1e-5, atol=1e-5)


def test_default_attrs_normalise_everything_with_epsilon_1e_7(run_op) -> None:
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    one, zero = np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)
    y, mean, variance = run_op("LayerNorm", [x, one, zero], DT_FLOAT, outputs=3)
    assert mean.shape == (1, 1) and mean[0, 0] == 2.5 and variance[0, 0] == 1.25
    np.testing.assert_allclose(y, (x - 2.5) / np.sqrt(1.25 + 1e-7), rtol=1e-6)


def test_half_is_normalised_in_float32_and_cast_back(run_op) -> None:
    x = X.astype(np.float16)
    gamma, beta = np.ones(8, np.float16), np.zeros(8, np.float16)
    attrs = {"begin_norm_axis": -1, "begin_params_axis": -1}
    y, mean, variance = run_op("LayerNorm", [x, gamma, beta], DT_HALF, attrs, outputs=3)
    assert y.dtype == mean.dtype == variance.dtype == np.float16
    ref_y, ref_mean, _ = _reference(x, gamma, beta, -1, 1e-7)
    np.testing.assert_allclose(y, ref_y, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-3, atol=1e-3)


def _grad_reference(dy, x, gamma, axis: int, eps: float = 1e-12):
    """The layer-norm gradient in float64 (what autodiff of the formula gives)."""
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x64.mean(axis=axes, keepdims=True)
    variance = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(variance + eps)
    xhat = (x64 - mean) * rstd
    g = dy64 * gamma
    pd_x = rstd * (
        g - g.mean(axis=axes, keepdims=True) - xhat * (g * xhat).mean(axis=axes, keepdims=True)
    )
    leading = tuple(range(x.ndim - np.ndim(gamma)))
    return pd_x, (dy64 * xhat).sum(axis=leading), dy64.sum(axis=leading), mean, variance


def test_two_values_normalise_to_plus_minus_one_whatever_they_are(run_op) -> None:
    # y = ±1 for a row of two distinct values, so no change of x moves y: pd_x is 0
    x = np.array([[1.0, 3.0]], np.float32)
    mean, variance = np.array([[2.0]], np.float32), np.array([[1.0]], np.float32)
    dy = np.array([[1.0, 0.0]], np.float32)
    gamma = np.array([1.0, 1.0], np.float32)
    pd_x, pd_gamma, pd_beta = run_op(
        "LayerNormGrad", [dy, x, variance, mean, gamma], DT_FLOAT, outputs=3
    )
    np.testing.assert_allclose(pd_x, [[0.0, 0.0]], atol=1e-7)
    np.testing.assert_allclose(pd_gamma, [-1.0, 0.0])  # dy * xhat, xhat = [-1, 1]
    np.testing.assert_allclose(pd_beta, [1.0, 0.0])


@pytest.mark.parametrize(("axis", "eps"), [(-1, 1e-12), (1, 1e-12), (-1, 0.5)])
def test_layer_norm_grad_matches_the_formula(run_op, axis: int, eps: float) -> None:
    gamma = RNG.uniform(0.5, 2.0, X.shape[axis:]).astype(np.float32)
    dy = RNG.standard_normal(X.shape).astype(np.float32)
    ref_x, ref_gamma, ref_beta, mean, variance = _grad_reference(dy, X, gamma, axis, eps)
    inputs = [dy, X, variance.astype(np.float32), mean.astype(np.float32), gamma]
    attrs = {} if eps == 1e-12 else {"epsilon": eps}  # default: the device kernel's 1e-12
    pd_x, pd_gamma, pd_beta = run_op("LayerNormGrad", inputs, DT_FLOAT, attrs, outputs=3)
    assert pd_x.shape == X.shape and pd_gamma.shape == pd_beta.shape == gamma.shape
    np.testing.assert_allclose(pd_x, ref_x, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pd_gamma, ref_gamma, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pd_beta, ref_beta, rtol=1e-5, atol=1e-5)


def test_layer_norm_grad_half_computes_in_float32(run_op) -> None:
    x = X.astype(np.float16)
    gamma = np.ones(8, np.float16)
    dy = np.ones(X.shape, np.float16)
    ref_x, _, ref_beta, mean, variance = _grad_reference(dy, x, gamma, -1)
    inputs = [dy, x, variance.astype(np.float16), mean.astype(np.float16), gamma]
    pd_x, _, pd_beta = run_op("LayerNormGrad", inputs, DT_HALF, outputs=3)
    assert pd_x.dtype == pd_beta.dtype == np.float16
    np.testing.assert_allclose(pd_x, ref_x, atol=2e-3)  # a constant dy moves nothing: 0
    np.testing.assert_allclose(pd_beta, ref_beta, rtol=1e-3)
