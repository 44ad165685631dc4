"""AdamApplyOne(WithDecay) against BERT's AdamWeightDecayOptimizer math in numpy and TF."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.npu_ops.opdef import DT_FLOAT

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(7)
GRAD, V, M, VAR = (RNG.standard_normal((4, 6)).astype(np.float32) for _ in range(4))
V = np.abs(V)
LR, B1, B2, EPS, WD = (np.float32(s) for s in (1e-3, 0.9, 0.999, 1e-6, 0.01))
SCALARS = [LR, B1, np.float32(1) - B1, B2, np.float32(1) - B2, EPS]


def _numpy_step(weight_decay: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g, v, m, var = (a.astype(np.float64) for a in (GRAD, V, M, VAR))
    b1, b2 = float(B1), float(B2)
    new_m = b1 * m + (1 - b1) * g
    new_v = b2 * v + (1 - b2) * g * g
    update = new_m / (np.sqrt(new_v) + float(EPS)) + weight_decay * var
    return new_v, new_m, var - float(LR) * update


def test_adam_apply_one_matches_numpy(run_op) -> None:
    new_v, new_m, new_var = run_op("AdamApplyOne", [GRAD, V, M, VAR, *SCALARS], DT_FLOAT, outputs=3)
    ref_v, ref_m, ref_var = _numpy_step(0.0)
    np.testing.assert_allclose(new_v, ref_v, rtol=1e-6)
    np.testing.assert_allclose(new_m, ref_m, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(new_var, ref_var, rtol=1e-6, atol=1e-7)
    assert not np.allclose(new_var, VAR)  # the step moved the variable


def test_adam_apply_one_with_decay_matches_numpy(run_op) -> None:
    outs = run_op("AdamApplyOneWithDecay", [GRAD, V, M, VAR, *SCALARS, WD], DT_FLOAT, outputs=3)
    for got, want in zip(outs, _numpy_step(float(WD)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    plain = run_op("AdamApplyOne", [GRAD, V, M, VAR, *SCALARS], DT_FLOAT, outputs=3)[2]
    np.testing.assert_allclose(plain - outs[2], LR * WD * VAR, rtol=0, atol=2e-7)


def test_adam_apply_one_is_bit_exact_against_the_same_tf_ops(run_op) -> None:
    new_v, new_m, new_var = run_op("AdamApplyOne", [GRAD, V, M, VAR, *SCALARS], DT_FLOAT, outputs=3)
    lr, b1, omb1, b2, omb2, eps = (tf.constant(s) for s in SCALARS)
    v = b2 * V + omb2 * (GRAD * GRAD)
    m = b1 * M + omb1 * GRAD
    var = VAR - lr * (m / (tf.sqrt(v) + eps))
    np.testing.assert_array_equal(new_v, v.numpy())
    np.testing.assert_array_equal(new_m, m.numpy())
    np.testing.assert_array_equal(new_var, var.numpy())
