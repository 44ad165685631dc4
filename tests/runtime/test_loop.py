"""iterations_per_loop: one run of IterationOp executes N steps, under the adapter's rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, tf

pytestmark = pytest.mark.tf


def _loop_graph(iterator: str = "initializable", drop_remainder: bool = True) -> dict[str, Any]:
    graph = tf.Graph()
    with graph.as_default():
        data = tf.compat.v1.data.Dataset.from_tensor_slices(np.arange(40, dtype=np.float32))
        data = data.batch(4, drop_remainder=drop_remainder)
        if iterator == "one_shot":
            it = tf.compat.v1.data.make_one_shot_iterator(data)
        else:
            it = tf.compat.v1.data.make_initializable_iterator(data)
        batch = it.get_next()
        total = tf.compat.v1.get_variable("total", [], initializer=tf.compat.v1.zeros_initializer())
        step = tf.compat.v1.train.get_or_create_global_step()
        train = tf.group(
            tf.compat.v1.assign_add(total, tf.reduce_sum(batch)),
            tf.compat.v1.assign_add(step, 1),
        )
        loop = tf.group(train, name="IterationOp")
        init = [tf.compat.v1.global_variables_initializer()]
        if iterator != "one_shot":
            init.append(it.initializer)
    return {
        "graph": graph,
        "loop": loop,
        "train": train,
        "init": init,
        "total": total,
        "step": step,
    }


def test_one_run_of_iteration_op_executes_n_steps() -> None:
    from tf2npu.runtime import run_stats

    g = _loop_graph()
    with tf.compat.v1.Session(graph=g["graph"], config=npu_config(iterations_per_loop=3)) as s:
        s.run(g["init"])
        s.run(g["loop"])
        assert s.run(g["step"]) == 3
        assert s.run(g["total"]) == sum(range(12))  # three batches of four consumed
        s.run(g["train"])  # the plain train op still runs once
        assert s.run(g["step"]) == 4
    assert run_stats().steps == 3  # the loop; the plain op applies no optimizer


def test_without_the_option_iteration_op_runs_once() -> None:
    g = _loop_graph()
    with tf.compat.v1.Session(graph=g["graph"], config=npu_config()) as s:
        s.run(g["init"])
        s.run(g["loop"])
        assert s.run(g["step"]) == 1


def test_a_one_shot_iterator_cannot_be_looped() -> None:
    from tf2npu.runtime.errors import LoopError

    g = _loop_graph("one_shot")
    with tf.compat.v1.Session(graph=g["graph"], config=npu_config(iterations_per_loop=2)) as s:
        s.run(g["init"])
        with pytest.raises(LoopError, match=r"one-shot iterator.*make_initializable_iterator"):
            s.run(g["loop"])


def test_dynamic_batch_shapes_cannot_be_looped() -> None:
    from tf2npu.runtime.errors import LoopError

    g = _loop_graph(drop_remainder=False)
    with tf.compat.v1.Session(graph=g["graph"], config=npu_config(iterations_per_loop=2)) as s:
        s.run(g["init"])
        with pytest.raises(LoopError, match="drop_remainder=True"):
            s.run(g["loop"])


def test_mixed_compute_rejects_a_loop_when_the_session_is_made() -> None:
    from tf2npu.errors import ConfigError

    g = _loop_graph()
    config = npu_config(iterations_per_loop=2, mix_compile_mode=True)
    with pytest.raises(ConfigError, match="iterations_per_loop"):
        tf.compat.v1.Session(graph=g["graph"], config=config)


def test_a_hand_written_optimizer_counts_by_its_global_step_assignment() -> None:
    """BERT's optimizer updates with assign and then global_step.assign(global_step + 1)."""
    from tf2npu.runtime import run_stats

    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.ones_initializer())
        step = tf.compat.v1.train.get_or_create_global_step()
        update = tf.compat.v1.assign(w, w * 0.5)
        train = tf.group(update, tf.compat.v1.assign(step, step + 1))
        init = tf.compat.v1.global_variables_initializer()
        with tf.compat.v1.Session(config=npu_config()) as sess:
            sess.run(init)  # assigns the global step its initial value: not a step
            for _ in range(3):
                sess.run(train)
            sess.run(w)
    assert run_stats().steps == 3
