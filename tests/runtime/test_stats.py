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
