"""The loss-scale records the run summary reads: found from a training run, never serialised."""

from __future__ import annotations

import logging

import pytest
from tests.runtime.conftest import tf

from tf2npu.runtime import lossscale

pytestmark = pytest.mark.tf


def _step() -> tuple[object, object, object]:
    v1 = tf.compat.v1
    w = v1.get_variable("w", [], initializer=v1.ones_initializer())
    scale = v1.get_variable("scale", [], initializer=v1.ones_initializer(), trainable=False)
    finite = tf.math.is_finite(w, name="finite")
    train = v1.assign_add(w, 1.0, name="train")
    with tf.control_dependencies([finite]):
        train_checked = tf.identity(train, name="train_checked")
    lossscale.record(finite, scale)
    return train, train_checked, finite


def test_a_run_that_reaches_the_flag_finds_its_record():
    graph = tf.Graph()
    with graph.as_default():
        train, train_checked, finite = _step()
    (found,) = lossscale.reached(graph, [train_checked.op])
    assert found.finite is finite and found.scale.op.name == "scale"
    assert lossscale.reached(graph, [train.op]) == ()
    assert lossscale.reached(tf.Graph(), [train.op]) == ()


def test_saving_the_meta_graph_writes_no_record_and_warns_nothing(caplog):
    # Every Saver.save exports the meta graph; a Python object in a collection made TF warn
    # "Type is unsupported ... 'LossScaleRecord' object has no attribute 'name'" each time.
    graph = tf.Graph()
    with graph.as_default():
        _step()
        with caplog.at_level(logging.WARNING):
            meta = tf.compat.v1.train.export_meta_graph()
    assert "unsupported" not in caplog.text
    assert list(meta.collection_def) == ["trainable_variables", "variables"]
