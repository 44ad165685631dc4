"""LarsV2 against the trust-ratio formula in numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.npu_ops.opdef import DT_FLOAT

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(3)
W = RNG.standard_normal((3, 4)).astype(np.float32)
G = (RNG.standard_normal((3, 4)) * 0.1).astype(np.float32)


def _reference(wd: float, lr: float, hyper: float, eps: float, clip: bool) -> np.ndarray:
    w, g = W.astype(np.float64), G.astype(np.float64)
    w_norm, g_norm = np.linalg.norm(w), np.linalg.norm(g)
    coeff = hyper * w_norm / (g_norm + wd * w_norm + eps)
    if clip:
        coeff = min(max(coeff / lr, 0.0), 1.0)
    return coeff * (g + wd * w)


@pytest.mark.parametrize(
    ("attrs", "lr", "clip"),
    [
        ({}, 0.1, False),
        ({"hyperpara": 0.02, "epsilon": 1e-3}, 0.5, False),
        ({"use_clip": True}, 0.1, True),
        ({"use_clip": True, "hyperpara": 5.0}, 0.1, True),
    ],
)
def test_lars_v2_matches_the_formula(run_op, attrs: dict, lr: float, clip: bool) -> None:
    wd = np.float32(0.01)
    (out,) = run_op("LarsV2", [W, G, wd, np.float32(lr)], DT_FLOAT, attrs)
    hyper, eps = attrs.get("hyperpara", 0.001), attrs.get("epsilon", 1e-5)
    np.testing.assert_allclose(out, _reference(0.01, lr, hyper, eps, clip), rtol=1e-5)


def test_clip_caps_the_coefficient_at_one() -> None:
    # hyperpara 5 makes coeff / lr far above 1: the output is exactly g + wd·w.
    np.testing.assert_allclose(_reference(0.01, 0.1, 5.0, 1e-5, True), G + 0.01 * W, rtol=1e-6)


def test_learning_rate_is_not_read_without_clip(run_op) -> None:
    a = run_op("LarsV2", [W, G, np.float32(0.0), np.float32(0.1)], DT_FLOAT)
    b = run_op("LarsV2", [W, G, np.float32(0.0), np.float32(7.0)], DT_FLOAT)
    np.testing.assert_array_equal(a[0], b[0])
