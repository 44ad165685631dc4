"""RaceLint: a run's variable races are warned once per variable and kept for the summary."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.runtime.context import context

v1 = tf.compat.v1


def _race_graph(ordered: bool) -> tuple[Any, Any, Any]:
    graph = tf.Graph()
    with graph.as_default():
        gs = v1.train.get_or_create_global_step()
        w = v1.get_variable("w", [2, 1], initializer=v1.ones_initializer())
        lr = v1.train.polynomial_decay(0.1, gs, 10, 0.0)
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.ones([2, 2]), w) - 1.0))
        train = v1.train.GradientDescentOptimizer(lr).minimize(loss)
        if ordered:
            with tf.control_dependencies([train]):
                train = gs.assign_add(1)
        else:
            train = tf.group(train, gs.assign(gs + 1))
        init = v1.global_variables_initializer()
    return graph, train, (init, loss)


@pytest.mark.parametrize("npu", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_race_is_warned_once_with_both_lines(npu: bool, caplog: pytest.LogCaptureFixture) -> None:
    graph, train, (init, loss) = _race_graph(ordered=False)
    config = npu_config() if npu else None
    with (
        caplog.at_level(logging.WARNING, "tf2npu.runtime"),
        v1.Session(graph=graph, config=config) as sess,
    ):
        sess.run(init)
        for _ in range(3):
            sess.run([train, loss])
        sess.run(train)  # another signature: the same variable is not said again
    (record,) = context().races.summary()
    assert record["variable"] == "global_step"
    assert record["read_op"] == "ReadVariableOp" and record["read"].startswith("PolynomialDecay/")
    assert record["write_op"] == "AssignVariableOp"
    assert record["read_at"].startswith(f"{__file__}:21 in _race_graph")
    assert record["write_at"].startswith(f"{__file__}:28 in _race_graph")
    said = [r.getMessage() for r in caplog.records if "[variable_race]" in r.getMessage()]
    assert len(said) == 1
    assert said[0].startswith("tf2npu: warning: [variable_race] variable 'global_step' is read by")
    assert "fix: order the read and the write" in said[0]


def test_an_ordered_write_says_nothing() -> None:
    graph, train, (init, loss) = _race_graph(ordered=True)
    with v1.Session(graph=graph) as sess:
        sess.run(init)
        sess.run([train, loss])
    assert context().races.summary() == []


def test_the_estimators_global_step_read_is_no_race() -> None:
    """TF's hooks fetch training_util's global-step read with every step, knowing it races."""
    from tensorflow.python.training import training_util

    graph = tf.Graph()
    with graph.as_default():
        gs = v1.train.get_or_create_global_step()
        read = training_util._get_or_create_global_step_read()
        w = v1.get_variable("w", [2, 1], initializer=v1.ones_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.ones([2, 2]), w) - 1.0))
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
        init = v1.global_variables_initializer()
    with v1.Session(graph=graph) as sess:
        sess.run(init)
        sess.run([train, read])
    assert context().races.summary() == []
