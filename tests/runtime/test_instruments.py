"""The run instrument seam: what an instrument sees, and extras fetched with every entry point."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.runtime.instruments import (
    CompileEvent,
    RunHook,
    RunHooks,
    RunInstrument,
    RunSignature,
    SessionInfo,
    SyncEvent,
)

pytestmark = pytest.mark.tf


class _Hook(RunHook):
    def __init__(self, extras: Sequence[Any], seen: list[tuple[list[Any], list[Any]]]) -> None:
        self.extras = list(extras)
        self._seen = seen

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        self._seen.append((list(values), [np.asarray(v).tolist() for v in extras]))


class _Recorder(RunInstrument):
    """Fetches the tensor named ``watch`` with every run and records what it sees."""

    def __init__(self, watch: str) -> None:
        self.watch = watch
        self.events: list[str] = []
        self.runs: list[tuple[list[Any], list[Any]]] = []
        self.signatures: list[RunSignature] = []

    def on_session(self, session: SessionInfo) -> None:
        self.events.append(f"session npu={session.npu}")

    def on_compile(self, event: CompileEvent) -> None:
        self.events.append(f"compile {event.graph_num}")

    def on_sync(self, event: SyncEvent) -> None:
        self.events.append(f"sync {event.graph_num}")

    def plan(self, run: RunSignature) -> RunHook:
        self.signatures.append(run)
        return _Hook([run.session.executed_tensor(self.watch)], self.runs)


def _graph() -> tuple[Any, Any, Any]:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        doubled = tf.multiply(x, 2.0, name="doubled")
        out = tf.add(doubled, 1.0, name="out")
    return graph, x, out


def _recorder() -> _Recorder:
    from tf2npu.runtime import context

    recorder = _Recorder("doubled:0")
    context().extra_instruments.append(recorder)
    return recorder


@pytest.mark.parametrize("npu", [True, False])
def test_run_fetches_the_extras_and_hands_back_only_the_callers_values(npu: bool) -> None:
    recorder = _recorder()
    graph, x, out = _graph()
    config = npu_config(precision_mode="must_keep_origin_dtype") if npu else None
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        assert sess.run(out, {x: [1.0, 2.0]}).tolist() == [3.0, 5.0]
        assert sess.run([out], {x: [0.0, 1.0]})[0].tolist() == [1.0, 3.0]
    own = [[np.asarray(v).tolist() for v in values] for values, _ in recorder.runs]
    assert own == [[[3.0, 5.0]], [[1.0, 3.0]]]
    assert [extras for _, extras in recorder.runs] == [[[2.0, 4.0]], [[0.0, 2.0]]]
    assert recorder.events[0] == f"session npu={npu}"
    if npu:
        assert recorder.events[1:] == ["compile 1", "sync 1"]
    [signature] = recorder.signatures  # planned once per signature
    assert signature.feeds == frozenset({"x:0"}) and not signature.step


@pytest.mark.parametrize("npu", [True, False])
def test_make_callable_and_keras_callables_reach_the_hooks(npu: bool) -> None:
    recorder = _recorder()
    graph, _, _ = _graph()
    config = npu_config(precision_mode="must_keep_origin_dtype") if npu else None
    with graph.as_default():
        const_out = tf.add(tf.multiply(tf.constant([1.0, 1.0]), 2.0, name="doubled2"), 0.0)
    recorder.watch = "doubled2:0"
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        call = sess.make_callable(const_out)
        assert call().tolist() == [2.0, 2.0]
        from tensorflow.core.protobuf import config_pb2

        options = config_pb2.CallableOptions(fetch=[const_out.name])
        keras_call = sess._make_callable_from_options(options)
        assert [v.tolist() for v in keras_call()] == [[2.0, 2.0]]
    assert [extras for _, extras in recorder.runs] == [[[2.0, 2.0]], [[2.0, 2.0]]]


def test_a_partial_run_drops_hooks_with_extras() -> None:
    recorder = _recorder()
    graph, x, out = _graph()
    with tf.compat.v1.Session(graph=graph, config=npu_config()) as sess:
        handle = sess.partial_run_setup([out], [x])
        assert sess.partial_run(handle, out, {x: [1.0, 1.0]}).tolist() == [3.0, 3.0]
    assert recorder.runs == []


def test_run_hooks_slice_each_hooks_extras() -> None:
    seen_a: list[tuple[list[Any], list[Any]]] = []
    seen_b: list[tuple[list[Any], list[Any]]] = []

    class _Fixed(RunInstrument):
        def __init__(self, extras: list[str], seen: list[tuple[list[Any], list[Any]]]) -> None:
            self.extras, self.seen = extras, seen

        def plan(self, run: RunSignature) -> RunHook:
            return _Hook(self.extras, self.seen)

    class _Nothing(RunInstrument):
        pass

    run = RunSignature(SessionInfo(1, False, None), (), (), False)
    hooks = RunHooks.plan([_Fixed(["a"], seen_a), _Nothing(), _Fixed(["b", "c"], seen_b)], run)
    assert hooks.extras == ["a", "b", "c"]
    call = hooks.begin()
    assert call is hooks.begin()  # no hook varies per run: one call serves every run
    assert list(call.extras) == ["a", "b", "c"] and not call.trace
    assert call.after_run(["own", 1, 2, 3]) == ["own"]
    assert seen_a == [(["own"], [1])] and seen_b == [(["own"], [2, 3])]
    partial = hooks.without_extras()
    assert partial.extras == [] and partial.hooks == []


class _EveryOther(RunHook):
    """Fetches its extra on even runs only and traces the odd ones."""

    def __init__(self, extras: Sequence[Any]) -> None:
        self.extras = list(extras)
        self.runs = 0
        self.seen: list[list[Any]] = []
        self.metadata: list[int] = []

    def extras_for_run(self) -> Sequence[Any]:
        return self.extras if self.runs % 2 == 0 else ()

    def trace(self) -> bool:
        return self.runs % 2 == 1

    def on_metadata(self, run_metadata: Any) -> None:
        self.metadata.append(len(run_metadata.step_stats.dev_stats))

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        self.seen.append([np.asarray(v).tolist() for v in extras])
        self.runs += 1


class _PerRun(RunInstrument):
    def __init__(self, watch: str) -> None:
        self.watch = watch
        self.hooks: list[_EveryOther] = []
        self.closed: list[int] = []

    def plan(self, run: RunSignature) -> RunHook:
        self.hooks.append(_EveryOther([run.session.executed_tensor(self.watch)]))
        return self.hooks[-1]

    def on_session_close(self, session: SessionInfo) -> None:
        self.closed.append(session.key)


def test_run_hooks_ask_each_run_for_its_extras_and_trace() -> None:
    hook = _EveryOther(["a"])
    run = RunSignature(SessionInfo(1, False, None), (), (), False)

    class _One(RunInstrument):
        def plan(self, run: RunSignature) -> RunHook:
            return hook

    hooks = RunHooks.plan([_One()], run)
    assert hooks.fixed is None
    first = hooks.begin()
    assert list(first.extras) == ["a"] and not first.trace
    assert first.after_run(["own", 7]) == ["own"]
    second = hooks.begin()
    assert list(second.extras) == [] and second.trace
    assert second.after_run(["own"]) == ["own"]
    assert hook.seen == [[7], []]


@pytest.mark.parametrize("npu", [True, False])
@pytest.mark.parametrize("entry", ["run", "make_callable", "keras"])
def test_per_run_extras_and_traces_reach_every_entry_point(npu: bool, entry: str) -> None:
    from tensorflow.core.protobuf import config_pb2

    from tf2npu.runtime import context

    instrument = _PerRun("twice:0")
    context().extra_instruments.append(instrument)
    graph, _, _ = _graph()
    config = npu_config(precision_mode="must_keep_origin_dtype") if npu else None
    with graph.as_default():
        const_out = tf.add(tf.multiply(tf.constant([1.0, 1.0]), 2.0, name="twice"), 1.0)
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        if entry == "run":
            call = lambda: sess.run(const_out)  # noqa: E731
        elif entry == "make_callable":
            call = sess.make_callable(const_out)
        else:
            keras = sess._make_callable_from_options(
                config_pb2.CallableOptions(fetch=[const_out.name])
            )
            call = lambda: keras()[0]  # noqa: E731
        results = [call().tolist() for _ in range(4)]
        key = instrument.closed[:]
    assert results == [[3.0, 3.0]] * 4
    [hook] = instrument.hooks
    assert hook.seen == [[[2.0, 2.0]], [], [[2.0, 2.0]], []]
    assert len(hook.metadata) == 2 and all(devices >= 1 for devices in hook.metadata)
    assert key == [] and len(instrument.closed) == 1  # told once, when the session closed


@pytest.mark.parametrize("npu", [True, False])
def test_an_instrument_reads_a_session_outside_the_instruments_until_it_closes(npu: bool) -> None:
    from tf2npu.runtime import context

    runs: list[list[Any]] = []

    class _Runs(RunInstrument):
        def plan(self, run: RunSignature) -> RunHook:
            return _Hook([], runs)

    context().extra_instruments.append(_Runs())
    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.Variable([1.5, -2.0], name="v")
        doubled = tf.multiply(v, 2.0, name="doubled")
        init = tf.compat.v1.global_variables_initializer()
    config = npu_config(precision_mode="must_keep_origin_dtype") if npu else None
    sess = tf.compat.v1.Session(graph=graph, config=config)
    sess.run(init)
    [info] = [i for i in context().open_sessions() if i.graph is graph]
    assert len(runs) == 1
    assert [value.tolist() for value in info.read([doubled])] == [[3.0, -4.0]]
    assert len(runs) == 1  # no instrument saw the read
    sess.close()
    assert info not in context().open_sessions()
    with pytest.raises(ValueError, match="closed"):
        info.read([doubled])
