"""DynamicRnn and BasicLSTMCell against a float64 numpy LSTM (gate columns i, j, f, o)."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.npu_ops.opdef import DT_FLOAT, DT_HALF

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

T, B, IN, H = 4, 3, 2, 5
RNG = np.random.default_rng(7)
X = RNG.standard_normal((T, B, IN)).astype(np.float32)
W = (RNG.standard_normal((IN + H, 4 * H)) * 0.5).astype(np.float32)
BIAS = (RNG.standard_normal(4 * H) * 0.2).astype(np.float32)
H0 = (RNG.standard_normal((1, B, H)) * 0.3).astype(np.float32)
C0 = (RNG.standard_normal((1, B, H)) * 0.3).astype(np.float32)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def _step(x, h, c, w, b, forget_bias):
    gates = np.concatenate([x, h], axis=1) @ w + b
    i, j, f, o = np.split(gates, 4, axis=1)
    i, j, f, o = _sigmoid(i), np.tanh(j), _sigmoid(f + forget_bias), _sigmoid(o)
    c_new = f * c + i * j
    return c_new, i, j, f, o


def _reference(x, w, b, lengths, h0, c0, forget_bias=0.0, cell_clip=-1.0):
    """All eight outputs, float64, stacked [T, B, H]: y, h, c, i, j, f, o, tanhc."""
    x, w, b = (a.astype(np.float64) for a in (x, w, b))
    h, c = h0.reshape(B, H).astype(np.float64), c0.reshape(B, H).astype(np.float64)
    rows = []
    for t in range(x.shape[0]):
        m = (t < np.asarray(lengths))[:, None].astype(np.float64)
        c1, i, j, f, o = _step(x[t], h, c, w, b, forget_bias)
        c = m * c1 + (1 - m) * c
        if cell_clip > 0:
            c = np.minimum(c, cell_clip)
        tanhc = np.tanh(c)
        y = o * tanhc
        h = m * y + (1 - m) * h
        rows.append((m * y, h, c, i, j, f, o, tanhc))
    return [np.stack(column) for column in zip(*rows, strict=True)]


def _run(run_op, lengths, attrs=None, dtype=np.float32, dt=DT_FLOAT):
    inputs = [
        X.astype(dtype),
        W.astype(dtype),
        BIAS.astype(dtype),
        np.asarray(lengths, np.int32),
        H0.astype(dtype),
        C0.astype(dtype),
    ]
    return run_op("DynamicRnn", inputs, dt, attrs, outputs=8)


def test_dynamic_rnn_matches_the_lstm_recurrence(run_op) -> None:
    got = _run(run_op, [T] * B, {"forget_bias": 1.0})
    want = _reference(X, W, BIAS, [T] * B, H0, C0, forget_bias=1.0)
    assert [g.shape for g in got] == [(T, B, H)] * 8
    for name, g, r in zip(["y", "h", "c", "i", "j", "f", "o", "tanhc"], got, want, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(got[0], got[1])  # y is h when no step is masked


def test_seq_length_freezes_the_state_and_zeroes_y(run_op) -> None:
    got = _run(run_op, [4, 2, 0])
    want = _reference(X, W, BIAS, [4, 2, 0], H0, C0)
    for g, r in zip(got[:3], want[:3], strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
    y, h, c = got[:3]
    assert not y[2:, 1].any() and not y[:, 2].any()
    np.testing.assert_array_equal(h[3, 1], h[1, 1])  # batch 1 stopped after 2 steps
    np.testing.assert_allclose(c[3, 2], C0[0, 2], rtol=1e-6)  # batch 2 never started


def test_cell_clip_bounds_the_cell_state_from_above(run_op) -> None:
    got = _run(run_op, [T] * B, {"cell_clip": 0.1, "forget_bias": 2.0})
    want = _reference(X, W, BIAS, [T] * B, H0, C0, forget_bias=2.0, cell_clip=0.1)
    assert got[2].max() <= np.float32(0.1) and got[2].min() < -0.1
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)


def test_half_runs_in_float32_and_casts_back(run_op) -> None:
    got = _run(run_op, [T] * B, dtype=np.float16, dt=DT_HALF)
    assert all(g.dtype == np.float16 for g in got)
    args = (a.astype(np.float16) for a in (X, W, BIAS))
    want = _reference(*args, [T] * B, H0.astype(np.float16), C0.astype(np.float16))
    np.testing.assert_allclose(got[0], want[0], rtol=2e-3, atol=2e-3)


def test_basic_lstm_cell_is_one_step(run_op) -> None:
    h, c = H0[0], C0[0]
    ct, ht, it, jt, ft, ot, tanhct = run_op(
        "BasicLSTMCell", [X[0], h, c, W, BIAS], DT_FLOAT, {"forget_bias": 0.5}, outputs=7
    )
    c_ref, i, j, f, o = _step(*(a.astype(np.float64) for a in (X[0], h, c, W, BIAS)), 0.5)
    for g, r in [
        (ct, c_ref),
        (it, i),
        (jt, j),
        (ft, f),
        (ot, o),
        (tanhct, np.tanh(c_ref)),
        (ht, o * np.tanh(c_ref)),
    ]:
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
