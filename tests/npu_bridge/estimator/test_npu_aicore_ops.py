"""npu_aicore_ops: fast_gelu (and its gradient) and dropout_v3, as BERT scripts call them."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator import npu_aicore_ops as module  # noqa: E402
from npu_bridge.estimator.npu_aicore_ops import dropout_v3, npu_aicore_ops  # noqa: E402

pytestmark = pytest.mark.tf

X = np.array([-6.0, -2.5, -1.0, -0.3, 0.0, 0.2, 1.0, 1.7, 3.0, 8.0], np.float32)


def _fast_gelu_np(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x / (1.0 + np.exp(-1.702 * x))


def _run(build, feed=X) -> list[np.ndarray]:
    with tf.Graph().as_default() as graph:
        tf.compat.v1.set_random_seed(7)
        x = tf.compat.v1.placeholder(tf.float32, list(feed.shape), name="x")
        fetches = build(x)
        with tf.compat.v1.Session(graph=graph) as session:
            return session.run(fetches, {x: feed})


def test_module_exposes_the_library_and_the_helper() -> None:
    assert module.npu_aicore_ops is npu_aicore_ops and module.dropout_v3 is dropout_v3


def test_fast_gelu_is_x_sigmoid_1702x() -> None:
    (y,) = _run(lambda x: [npu_aicore_ops.fast_gelu(x)])
    np.testing.assert_allclose(y, _fast_gelu_np(X), rtol=1e-6, atol=1e-6)


def test_fast_gelu_gradient_is_fast_gelu_grad_and_matches_central_difference() -> None:
    op_types = []

    def build(x):
        y = npu_aicore_ops.fast_gelu(x)
        (g,) = tf.gradients(y, x)
        op_types.append(g.op.get_attr("_npu_op"))
        return [g]

    (grad,) = _run(build)
    assert op_types == [b"FastGeluGrad"]
    h = 1e-5
    x = X.astype(np.float64)
    numeric = (_fast_gelu_np(x + h) - _fast_gelu_np(x - h)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def test_dropout_v3_keeps_scaled_or_zeroes_and_gradient_uses_same_mask() -> None:
    ones = np.ones((64, 32), np.float32)

    def build(x):
        y = dropout_v3(x, 0.8)
        return [y, tf.gradients(y, x)[0]]

    y, grad = _run(build, ones)
    assert set(np.unique(y).round(5)) <= {0.0, 1.25}
    assert 0.7 < (y > 0).mean() < 0.9
    np.testing.assert_array_equal(grad, y)  # d(x·m/p)/dx = m/p, the same mask


def test_dropout_v3_emits_the_v3_ops() -> None:
    with tf.Graph().as_default() as graph:
        dropout_v3(tf.ones([4, 4]), 0.9)
        types = {
            op.get_attr("_npu_op") for op in graph.get_operations() if "_npu_op" in op.node_def.attr
        }
    assert types == {b"DropOutGenMaskV3", b"DropOutDoMaskV3"}


def test_dropout_v3_keep_prob_one_returns_x() -> None:
    with tf.Graph().as_default():
        x = tf.ones([2])
        assert dropout_v3(x, 1.0) is x


@pytest.mark.parametrize(
    ("x", "keep_prob", "match"),
    [(np.ones(2, np.int32), 0.5, "floating point"), (np.ones(2, np.float32), 1.5, r"\(0, 1\]")],
)
def test_dropout_v3_rejects_bad_arguments(x: np.ndarray, keep_prob: float, match: str) -> None:
    with tf.Graph().as_default(), pytest.raises(ValueError, match=match):
        dropout_v3(tf.constant(x), keep_prob)


def test_unprovided_op_names_the_provided_ones() -> None:
    with pytest.raises(AttributeError, match=r"npu_aicore_ops\.centralization: .*fast_gelu"):
        _ = npu_aicore_ops.centralization
