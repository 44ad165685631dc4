"""The race lint (``races``): literal TF 1.x graphs with and without a variable race."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tf2npu.graph.ir import Graph
from tf2npu.graph.lint import Race, is_assign, races, sinks

tf = pytest.importorskip("tensorflow").compat.v1


def _build(body: Callable[[], list[Any]]) -> tuple[Graph, list[str]]:
    """``body``'s graph as IR, and the op names of what it returns (the run's fetches)."""
    graph = tf.Graph()
    with graph.as_default():
        fetches = body()
    return Graph.from_graph_def(graph.as_graph_def()), [f.name.split(":")[0] for f in fetches]


def _bert_style(resource: bool, ordered: bool) -> Callable[[], list[Any]]:
    """BERT's optimization.py in 12 lines: the learning rate reads global_step, and the run
    also assigns global_step + 1 (inside tf.control_dependencies when ``ordered``)."""

    def body() -> list[Any]:
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        w = tf.get_variable("w", [2, 1], use_resource=resource)
        gs = tf.get_variable("global_step", [], tf.int64, tf.zeros_initializer(),
                             trainable=False, use_resource=resource)  # fmt: skip
        lr = tf.train.polynomial_decay(0.1, gs, 10, 0.0)
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
        train = tf.train.GradientDescentOptimizer(lr).minimize(loss)
        if ordered:
            with tf.control_dependencies([train]):
                return [gs.assign(gs + 1), loss]
        return [tf.group(train, gs.assign(gs + 1)), loss]

    return body


@pytest.mark.parametrize(
    ("resource", "read", "read_op", "write", "write_op"),
    [
        # a ref variable's Identity aliases its buffer: the Cast that consumes it reads
        (False, "PolynomialDecay/Cast_2", "Cast", "Assign", "Assign"),
        (True, "PolynomialDecay/Cast_2/ReadVariableOp", "ReadVariableOp", "AssignVariableOp",
         "AssignVariableOp"),
    ],
)  # fmt: skip
def test_the_global_step_race_is_found(
    resource: bool, read: str, read_op: str, write: str, write_op: str
) -> None:
    graph, roots = _build(_bert_style(resource, ordered=False))
    assert races(graph, roots) == [Race("global_step", read, read_op, write, write_op)]


@pytest.mark.parametrize("resource", [False, True])
def test_control_dependencies_order_the_write_after_the_read(resource: bool) -> None:
    graph, roots = _build(_bert_style(resource, ordered=True))
    assert races(graph, roots) == []


@pytest.mark.parametrize("resource", [False, True])
def test_an_optimizers_apply_ops_read_and_update_their_slots_in_one_op(resource: bool) -> None:
    def body() -> list[Any]:
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        w = tf.get_variable("w", [2, 1], use_resource=resource)
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
        return [tf.train.AdamOptimizer(0.1).minimize(loss), loss]

    graph, roots = _build(body)
    writes = {n.op for n in graph if is_assign(n.op)}
    assert writes >= {"ResourceApplyAdam" if resource else "ApplyAdam"}  # m and v are inputs
    assert races(graph, roots) == []


def test_apply_gradients_orders_its_global_step_increment_after_the_updates() -> None:
    def body() -> list[Any]:
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        w = tf.get_variable("w", [2, 1])
        gs = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.1, gs, 1, 0.5)
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
        opt = tf.train.GradientDescentOptimizer(lr)
        return [opt.apply_gradients(opt.compute_gradients(loss), global_step=gs), loss]

    graph, roots = _build(body)
    assert races(graph, roots) == []  # AssignAdd sits under control_dependencies(updates)


def test_apply_gradients_with_a_learning_rate_from_global_step_races_another_optimizer() -> None:
    """A GAN's two optimizers: D's apply_gradients(global_step=gs) increments gs after D's
    updates only; G's learning rate reads gs, unordered with that increment."""

    def body() -> list[Any]:
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        d = tf.get_variable("d", [2, 1])
        g = tf.get_variable("g", [2, 1])
        gs = tf.train.get_or_create_global_step()
        d_loss = tf.reduce_mean(tf.square(tf.matmul(x, d)))
        g_loss = tf.reduce_mean(tf.square(tf.matmul(x, g) - 1.0))
        d_opt = tf.train.GradientDescentOptimizer(0.1)
        d_train = d_opt.apply_gradients(d_opt.compute_gradients(d_loss, [d]), global_step=gs)
        lr = tf.train.exponential_decay(0.1, gs, 1, 0.5)
        g_train = tf.train.GradientDescentOptimizer(lr).minimize(g_loss, var_list=[g])
        return [tf.group(d_train, g_train)]

    graph, roots = _build(body)
    (race,) = races(graph, roots)
    assert (race.variable, race.write_op) == ("global_step", "AssignAddVariableOp")
    assert race.read.startswith("ExponentialDecay/") and race.read_op == "ReadVariableOp"


def test_a_run_that_does_not_assign_has_no_race() -> None:
    graph, roots = _build(_bert_style(resource=True, ordered=False))
    assert races(graph, ["loss" if "loss" in graph else roots[1]]) == []


def test_a_fed_learning_rate_cuts_the_read_out_of_the_run() -> None:
    graph, roots = _build(_bert_style(resource=True, ordered=False))
    lr = next(n.name for n in graph if n.name.startswith("PolynomialDecay") and n.op == "Mul")
    assert races(graph, roots, feeds=[f"{lr}:0"]) == []
    assert races(graph, roots, feeds=["unrelated:0"]) != []


def test_sinks_are_the_roots_of_a_graph_file() -> None:
    graph, roots = _build(_bert_style(resource=True, ordered=False))
    assert set(roots) <= set(sinks(graph))
    assert [r.variable for r in races(graph, sinks(graph))] == ["global_step"]


def test_the_message_names_the_variable_both_ops_and_their_lines() -> None:
    race = Race("global_step", "lr/Cast", "Cast", "Assign", "Assign")
    lines = {"lr/Cast": "train.py:9 in <module>"}.get
    assert race.message(lambda name: lines(name) or "") == (
        "variable 'global_step' is read by 'lr/Cast' (Cast, train.py:9 in <module>) and "
        "assigned by 'Assign' (Assign) in the same run, with nothing ordering them: the value "
        "read depends on the op schedule"
    )


def test_a_read_that_changes_the_model_is_named_before_one_that_is_only_shown() -> None:
    def body() -> list[Any]:
        gs = tf.get_variable("global_step", [], tf.int64, tf.zeros_initializer(),
                             trainable=False, use_resource=True)  # fmt: skip
        shown = tf.identity(gs.read_value(), name="shown")  # built first: a hook's fetch
        w = tf.get_variable("w", [2, 1], use_resource=True)
        lr = tf.train.polynomial_decay(0.1, gs, 10, 0.0)
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.ones([2, 2]), w) - 1.0))
        train = tf.train.GradientDescentOptimizer(lr).minimize(loss)
        return [tf.group(train, gs.assign(gs + 1)), shown]

    graph, roots = _build(body)
    (race,) = races(graph, roots)
    assert race.read == "PolynomialDecay/Cast_2/ReadVariableOp"
    (alone,) = races(graph, [roots[1], "AssignVariableOp"])  # no other read: this one is named
    assert alone == Race("global_step", "Read/ReadVariableOp", "ReadVariableOp",
                         "AssignVariableOp", "AssignVariableOp")  # fmt: skip
