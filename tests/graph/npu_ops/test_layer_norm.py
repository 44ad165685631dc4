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
