"""Importing npu_convert_dropout makes Keras Dropout layers emit the NPU dropout ops."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf


@pytest.fixture
def converted() -> Iterator[None]:
    """Dropout as the module's import leaves it (re-run, in case an earlier test restored it)."""
    import importlib

    from npu_bridge.estimator.npu import npu_convert_dropout

    npu_convert_dropout.restore()
    importlib.reload(npu_convert_dropout)
    yield
    npu_convert_dropout.restore()


def _ops(graph: object) -> set[str]:
    return {
        op.get_attr("_npu_op").decode()
        for op in graph.get_operations()  # type: ignore[attr-defined]
        if "_npu_op" in op.node_def.attr
    }


def test_training_dropout_draws_an_npu_mask(converted: None) -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.ones([64, 32])
        y = tf.compat.v1.keras.layers.Dropout(0.5)(x, training=True)
        assert _ops(graph) == {"DropOutGenMask", "DropOutDoMask"}
        with tf.compat.v1.Session() as sess:
            values = sess.run(y)
    assert set(np.unique(values)) <= {0.0, 2.0}
    assert 0.3 < (values == 2.0).mean() < 0.7


def test_inference_and_rate_zero_are_the_identity(converted: None) -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.ones([4, 4])
        off = tf.compat.v1.keras.layers.Dropout(0.5)(x, training=False)
        zero = tf.compat.v1.keras.layers.Dropout(0.0)(x, training=True)
        assert not _ops(graph)
        with tf.compat.v1.Session() as sess:
            np.testing.assert_array_equal(sess.run([off, zero]), [np.ones((4, 4))] * 2)


def test_restore_gives_keras_its_own_dropout_back(converted: None) -> None:
    from keras.src.layers.regularization.dropout import Dropout

    from npu_bridge.estimator.npu import npu_convert_dropout

    npu_convert_dropout.restore()
    graph = tf.Graph()
    with graph.as_default():
        Dropout(0.5)(tf.ones([4, 4]), training=True)
        assert not _ops(graph)
    assert Dropout.call is not npu_convert_dropout.npu_dropout_call


def test_spatial_dropout_stops_with_why_the_npu_mask_cannot_broadcast(converted: None) -> None:
    # Before: "Input to reshape is a tensor with 512 values, but the requested shape has 32"
    # from inside DropOutDoMask at run time, or "Cannot reshape a tensor with 128 elements"
    # when building the graph of a static x.
    why = r"fewer elements than x; the NPU dropout does not broadcast its mask \(a Keras Spa"
    layer = tf.compat.v1.keras.layers.SpatialDropout1D(0.5)
    for shape in ([2, 8, 32], [None, 8, 32]):
        with tf.Graph().as_default():
            x = tf.compat.v1.placeholder(tf.float32, shape)
            y = layer(x, training=True)
            with tf.compat.v1.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                               match=why):  # fmt: skip
                sess.run(y, {x: np.ones([2, 8, 32], np.float32)})
