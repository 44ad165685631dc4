"""RuntimeContext: one home for what the sessions of a process share."""

from __future__ import annotations

import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.runtime import configure, context, current, run_stats
from tf2npu.runtime.context import RuntimeContext, session_instruments, use_context
from tf2npu.runtime.dump import TensorDump

pytestmark = pytest.mark.tf


def test_settings_stats_and_npu_by_default_live_in_the_context() -> None:
    ctx = context()
    configure(execution="xla")
    assert current() is ctx.settings and ctx.settings.execution == "xla"
    assert run_stats() is ctx.stats
    fresh = RuntimeContext()
    before = use_context(fresh)
    try:
        assert before is ctx and current().execution == "host" and run_stats() is fresh.stats
    finally:
        use_context(before)
    assert current().execution == "xla"


def test_sessions_record_into_the_context_they_were_made_in() -> None:
    graph = tf.Graph()
    with graph.as_default():
        out = tf.constant(1.0) + 1.0
    with tf.compat.v1.Session(graph=graph, config=npu_config()) as sess:
        other = RuntimeContext()
        before = use_context(other)
        try:
            sess.run(out)
        finally:
            use_context(before)
    assert run_stats().sessions == 1 and run_stats().graphs_compiled == 1
    assert other.stats.sessions == 0 and other.stats.graphs_compiled == 0


def test_numbers_are_per_context() -> None:
    a, b = RuntimeContext(), RuntimeContext()
    assert [a.next_graph_num(), a.next_graph_num(), b.next_graph_num()] == [1, 2, 1]
    assert a.next_session_key() == 1


def test_run_signatures_keep_their_number_and_count_their_steps() -> None:
    ctx = RuntimeContext()
    assert [ctx.run_number(("s1", "train")), ctx.run_number(("s1", "eval"))] == [1, 2]
    assert ctx.run_number(("s1", "train")) == 1  # planned again (the graph grew): same number
    assert [ctx.next_step(1), ctx.next_step(1), ctx.next_step(2)] == [0, 1, 0]


def test_a_session_gets_a_dump_instrument_only_when_its_options_ask(tmp_path) -> None:
    from tf2npu.config.sources import resolve

    ctx = context()
    plain = session_instruments(resolve(npu_config()), ctx)
    dumped = session_instruments(
        resolve(npu_config(enable_dump=True, dump_path=str(tmp_path))), ctx
    )
    assert plain == ctx.instruments
    assert dumped[: len(plain)] == plain and isinstance(dumped[-1], TensorDump)
