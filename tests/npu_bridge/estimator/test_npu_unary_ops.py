"""npu_unary_ops: the op-library object scripts call gelu on; values, gradient, other ops."""

from __future__ import annotations

import math

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu_unary_ops import NpuOpLibrary, npu_unary_ops  # noqa: E402

pytestmark = pytest.mark.tf

X = np.array([-6.0, -2.5, -1.0, -0.3, 0.0, 0.2, 1.0, 1.7, 3.0, 8.0], np.float32)
C = math.sqrt(2.0 / math.pi)


def _gelu_np(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(C * (x + 0.044715 * x**3)))


def _run(build) -> list[np.ndarray]:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [len(X)], name="x")
        fetches = build(x)
        with tf.compat.v1.Session(graph=graph) as session:
            return session.run(fetches, {x: X})


def test_gelu_matches_the_tanh_formula() -> None:
    (y,) = _run(lambda x: [npu_unary_ops.gelu(x)])
    np.testing.assert_allclose(y, _gelu_np(X), rtol=1e-6, atol=1e-6)
    assert y[4] == 0.0


def test_gelu_gradient_matches_a_central_difference_of_the_formula() -> None:
    def build(x):
        y = npu_unary_ops.gelu(x)
        return [tf.gradients(y, x)[0], y]

    grad, _ = _run(build)
    h = 1e-5
    numeric = (_gelu_np(X.astype(np.float64) + h) - _gelu_np(X.astype(np.float64) - h)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def test_gelu_grad_called_directly_scales_by_the_incoming_gradient() -> None:
    def build(x):
        y = npu_unary_ops.gelu(x, name="g")
        return [npu_unary_ops.gelu_grad(tf.ones_like(x) * 2.0, x, y), tf.gradients(y, x)[0], y]

    twice, once, _ = _run(build)
    np.testing.assert_allclose(twice, 2.0 * once, rtol=1e-6)


def test_gelu_keeps_the_static_shape_and_the_name() -> None:
    with tf.Graph().as_default():
        y = npu_unary_ops.gelu(tf.compat.v1.placeholder(tf.float16, [None, 768]), name="act")
    assert y.shape.as_list() == [None, 768] and y.dtype == tf.float16 and y.op.name == "act"


def test_mask_ops_called_directly_with_keep_prob_one_return_x() -> None:
    def build(x):
        mask = npu_unary_ops.drop_out_gen_mask(tf.shape(x), 1.0, seed=1, seed2=2)
        return [npu_unary_ops.drop_out_do_mask(x, mask, 1.0), mask]

    y, mask = _run(build)
    np.testing.assert_array_equal(y, X)
    assert mask.tolist() == [255, 3] + [0] * 14  # 10 set bits, padded to 128 bits


def test_ops_the_library_lacks_raise_attribute_error_listing_the_provided_ones() -> None:
    with pytest.raises(
        AttributeError,
        match=r"npu_unary_ops.lars_v2: tf2npu does not provide "
        r"this op .*drop_out_do_mask, drop_out_gen_mask, "
        r"gelu, gelu_grad",
    ):
        npu_unary_ops.lars_v2  # noqa: B018
    assert isinstance(npu_unary_ops, NpuOpLibrary)


def test_eager_calls_are_refused() -> None:
    from tensorflow.python.eager import context

    with context.eager_mode(), pytest.raises(RuntimeError, match=r"only be built in a graph"):
        npu_unary_ops.gelu(tf.constant([1.0]))
