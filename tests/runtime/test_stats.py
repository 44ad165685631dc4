"""The run counters: per-graph figures, steps in every session kind, non-finite fetches."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, tf

pytestmark = pytest.mark.tf


def _geop_graph() -> tuple[Any, Any]:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant([[1.0, 2.0]], name="x")
        out = tf.matmul(x, tf.ones([2, 2]), name="out")
    return graph, out


def _run_once(graph: Any, out: Any) -> None:
    with tf.compat.v1.Session(graph=graph, config=npu_config()) as sess:
        sess.run(out)


def test_a_freed_graphs_figures_are_kept_when_its_id_is_reused(monkeypatch: Any) -> None:
    """A training session's mirror is freed, the eval session's gets the same id(): before the
    fix, the second compile replaced the first one's figures (1 GeOp reported instead of 2)."""
    import tf2npu.runtime.mirror as mirror_module
    from tf2npu.runtime import run_stats

    monkeypatch.setattr(mirror_module, "id", lambda _obj: 42, raising=False)  # ids coincide
    _run_once(*_geop_graph())
    gc.collect()
    _run_once(*_geop_graph())
    assert run_stats().graphs_compiled == 2
    assert run_stats().geops == 2


def test_graphs_that_live_side_by_side_count_once_each_at_their_latest_compile() -> None:
    from tf2npu.runtime import run_stats

    graph, out = _geop_graph()
    with tf.compat.v1.Session(graph=graph, config=npu_config()) as sess:
        sess.run(out)
        with graph.as_default():
            later = tf.identity(out * 2.0, name="later")
        np.testing.assert_allclose(sess.run(later), [[6.0, 6.0]])
        _run_once(*_geop_graph())
    # The grown graph was compiled whole again (its change is not small): its one GeOp replaces
    # its first compile's; the other graph adds its own.
    assert run_stats().graphs_compiled == 3
    assert run_stats().geops == 2


@pytest.mark.parametrize("use_resource", [False, True])
def test_check_result_does_not_list_the_stubs_of_a_grown_graph(
    tmp_path: Any, use_resource: bool
) -> None:
    """A small change is compiled with Placeholder stubs for the earlier nodes it reads; those
    are not host-fed placeholders of the user's graph and must not reach check_result."""
    import json

    from tf2npu.runtime import configure

    configure(report_dir=tmp_path)
    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.get_variable(
            "v", [4], initializer=tf.compat.v1.ones_initializer(), use_resource=use_resource
        )
        h = tf.identity(v)
        for _ in range(30):
            h = tf.nn.relu(h * 1.5 + 0.5)
        text = tf.compat.v1.py_func(lambda a: a, [h], tf.float32, name="as_text")  # host only
        with tf.compat.v1.Session(config=npu_config()) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(text)
            later = tf.identity(v + 1.0, name="later")  # small change, reads v through a stub
            np.testing.assert_allclose(sess.run(later), [2.0] * 4)
            assert sess.mirror.syncs[-1].incremental
    listed = {
        op["name"] for op in json.loads((tmp_path / "check_result.tf.json").read_text())["op"]
    }
    assert "as_text" in listed
    assert listed == {"as_text"}
