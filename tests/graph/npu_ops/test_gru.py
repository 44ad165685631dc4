"""DynamicGruV2 and DynamicAUGRU against a float64 numpy GRU (reset after the hidden matmul)."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.npu_ops.opdef import DT_FLOAT

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

T, B, IN, H = 3, 2, 4, 3
RNG = np.random.default_rng(11)
X = RNG.standard_normal((T, B, IN)).astype(np.float32)
W_IN = (RNG.standard_normal((IN, 3 * H)) * 0.5).astype(np.float32)
W_HID = (RNG.standard_normal((H, 3 * H)) * 0.5).astype(np.float32)
B_IN = (RNG.standard_normal(3 * H) * 0.2).astype(np.float32)
B_HID = (RNG.standard_normal(3 * H) * 0.2).astype(np.float32)
H0 = (RNG.standard_normal((B, H)) * 0.3).astype(np.float32)
ATT = RNG.uniform(0.0, 1.0, (T, B)).astype(np.float32)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def _blocks(v: np.ndarray, order: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    first, second, cand = np.split(v, 3, axis=1)
    return (first, second, cand) if order == "zrh" else (second, first, cand)


def _reference(lengths, att=None, order="zrh"):
    """y, h, z, z_att, r, n, hidden_new, float64, stacked [T, B, H]."""
    x, w_in, w_hid, b_in, b_hid = (a.astype(np.float64) for a in (X, W_IN, W_HID, B_IN, B_HID))
    h = H0.astype(np.float64)
    rows = []
    for t in range(T):
        m = (t < np.asarray(lengths))[:, None].astype(np.float64)
        gi_z, gi_r, gi_h = _blocks(x[t] @ w_in + b_in, order)
        gh_z, gh_r, gh_h = _blocks(h @ w_hid + b_hid, order)
        z, r = _sigmoid(gi_z + gh_z), _sigmoid(gi_r + gh_r)
        n = np.tanh(gi_h + r * gh_h)
        z_att = z if att is None else (1.0 - att[t][:, None]) * z
        new = z_att * h + (1 - z_att) * n
        h = m * new + (1 - m) * h
        rows.append((m * new, h, z, z_att, r, n, gh_h))
    return [np.stack(column) for column in zip(*rows, strict=True)]


def _inputs(lengths, att=None):
    middle = [W_IN, W_HID] + ([] if att is None else [att]) + [B_IN, B_HID]
    return [X, *middle, np.asarray(lengths, np.int32), H0]


@pytest.mark.parametrize("order", ["zrh", "rzh"])
def test_gru_v2_matches_the_recurrence(run_op, order: str) -> None:
    got = run_op("DynamicGruV2", _inputs([T, T]), DT_FLOAT, {"gate_order": order}, outputs=6)
    y, h, z, _, r, n, gh_h = _reference([T, T], order=order)
    names = ["y", "h", "update", "reset", "new", "hidden_new"]
    for name, g, w in zip(names, got, [y, h, z, r, n, gh_h], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_gru_v2_seq_length_keeps_the_state(run_op) -> None:
    y, h = run_op("DynamicGruV2", _inputs([1, 3]), DT_FLOAT, outputs=2)
    want = _reference([1, 3])
    np.testing.assert_allclose(h, want[1], rtol=1e-5, atol=1e-6)
    assert not y[1:, 0].any()
    np.testing.assert_array_equal(h[2, 0], h[0, 0])


def test_augru_scales_the_update_gate_by_one_minus_the_attention(run_op) -> None:
    got = run_op("DynamicAUGRU", _inputs([T, 2], ATT), DT_FLOAT, outputs=7)
    want = _reference([T, 2], att=ATT)
    names = ["y", "h", "update", "update_att", "reset", "new", "hidden_new"]
    for name, g, w in zip(names, got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_augru_with_zero_attention_is_the_gru(run_op) -> None:
    zero = np.zeros((T, B), np.float32)
    augru = run_op("DynamicAUGRU", _inputs([T, T], zero), DT_FLOAT, outputs=2)
    gru = run_op("DynamicGruV2", _inputs([T, T]), DT_FLOAT, outputs=2)
    np.testing.assert_array_equal(augru[1], gru[1])


def test_reset_before_is_refused_when_traced(run_op) -> None:
    with pytest.raises(ValueError, match=r"reset_after=True only"):
        run_op("DynamicGruV2", _inputs([T, T]), DT_FLOAT, {"reset_after": False})
