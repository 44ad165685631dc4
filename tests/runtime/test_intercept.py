"""The one interception path: a failed run's error and a session's target reach the instruments,
through every entry point of NPU and stock sessions alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.runtime.instruments import RunHook, RunInstrument, RunSignature, SessionInfo

pytestmark = pytest.mark.tf


class _Errors(RunInstrument):
    """Records each failed run (its fetches, the error's type, op and graph) and, when
    ``replace`` is set, raises that instead."""

    def __init__(self, replace: Exception | None = None) -> None:
        self.seen: list[tuple[list[str], str, str | None, Any]] = []
        self.replace = replace

    def on_run_error(self, run: RunSignature, error: Exception) -> Exception | None:
        op = getattr(error, "op", None)
        where = (op.name, op.graph) if op is not None else (None, None)
        self.seen.append(([t.name for t in run.fetches], type(error).__name__, *where))
        return self.replace


def _checked() -> tuple[Any, Any, Any]:
    """A graph whose ``checked`` fetch fails when ``x`` holds a NaN (``CheckNumerics``)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        checked = tf.debugging.check_numerics(x * 2.0, "x is not finite", name="check")
    return graph, x, checked


def _config(npu: bool) -> Any:
    return npu_config(precision_mode="must_keep_origin_dtype") if npu else None


def _add(instrument: RunInstrument) -> Any:
    from tf2npu.runtime import context

    context().extra_instruments.append(instrument)
    return instrument


@pytest.mark.parametrize("npu", [True, False])
def test_a_failed_run_reaches_on_run_error_with_the_error_against_the_client_op(
    npu: bool,
) -> None:
    errors = _add(_Errors())
    graph, x, checked = _checked()
    with tf.compat.v1.Session(graph=graph, config=_config(npu)) as sess:
        assert sess.run(checked, {x: [1.0, 2.0]}).tolist() == [2.0, 4.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match="x is not finite") as raised:
            sess.run(checked, {x: [np.nan, 2.0]})
    assert errors.seen == [(["check:0"], "InvalidArgumentError", "check", graph)]
    assert raised.value.op.graph is graph  # the user's graph, not the NPU session's mirror


@pytest.mark.parametrize("npu", [True, False])
@pytest.mark.parametrize("entry", ["make_callable", "keras"])
def test_callables_errors_reach_on_run_error_too(npu: bool, entry: str) -> None:
    from tensorflow.core.protobuf import config_pb2

    errors = _add(_Errors())
    graph = tf.Graph()
    with graph.as_default():
        bad = tf.constant([np.inf, 1.0])
        checked = tf.debugging.check_numerics(bad, "constant is not finite", name="check")
    with tf.compat.v1.Session(graph=graph, config=_config(npu)) as sess:
        if entry == "make_callable":
            call = sess.make_callable(checked)
        else:
            call = sess._make_callable_from_options(config_pb2.CallableOptions(fetch=["check:0"]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="constant is not finite"):
            call()
    # TensorFlow's callables raise errors without their op: nothing to map onto the client op
    assert errors.seen == [(["check:0"], "InvalidArgumentError", None, None)]


@pytest.mark.parametrize("npu", [True, False])
def test_an_instrument_replaces_the_error_and_the_next_one_sees_the_replacement(
    npu: bool,
) -> None:
    first = _add(_Errors(replace=RuntimeError("rank 0: collective failed")))
    seen: list[str] = []

    class _Next(RunInstrument):
        def on_run_error(self, run: RunSignature, error: Exception) -> Exception | None:
            seen.append(repr(error))
            return None

    _add(_Next())
    graph, x, checked = _checked()
    sess = tf.compat.v1.Session(graph=graph, config=_config(npu))
    with pytest.raises(RuntimeError) as raised:
        sess.run(checked, {x: [np.inf, 2.0]})
    sess.close()
    assert str(raised.value) == "rank 0: collective failed"
    assert [name for name, *_ in first.seen] == [["check:0"]]
    assert seen == ["RuntimeError('rank 0: collective failed')"]
    cause = raised.value.__cause__
    assert isinstance(cause, tf.errors.InvalidArgumentError) and cause.op.graph is graph


@pytest.mark.parametrize("npu", [True, False])
def test_errors_that_are_not_a_runs_pass_the_instruments_by(npu: bool) -> None:
    errors = _add(_Errors())

    class _Hook(RunHook):
        def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
            raise KeyError("stop here")

    class _Stops(RunInstrument):
        def plan(self, run: RunSignature) -> RunHook:
            return _Hook()

    _add(_Stops())
    graph, x, checked = _checked()
    sess = tf.compat.v1.Session(graph=graph, config=_config(npu))
    with pytest.raises(KeyError, match="stop here"):
        sess.run(checked, {x: [1.0, 2.0]})
    sess.close()
    assert errors.seen == []


class _Target(RunInstrument):
    """Gives every session it is asked about 3 inter-op threads; records what it was given."""

    def __init__(self) -> None:
        self.seen: list[tuple[bool, str, int]] = []

    def session_target(self, session: SessionInfo, target: str, config: Any) -> tuple[str, Any]:
        from tensorflow.core.protobuf import config_pb2

        copy = config_pb2.ConfigProto()
        if config is not None:
            copy.CopyFrom(config)
        self.seen.append((session.npu, target, copy.inter_op_parallelism_threads))
        copy.inter_op_parallelism_threads = 3
        return target, copy


def test_a_stock_session_runs_where_session_target_says_and_unmarked_ones_are_not_asked() -> None:
    from tf2npu.runtime.stock import stock_session

    target = _add(_Target())
    given = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2)
    with tf.Graph().as_default():
        with tf.compat.v1.Session(config=given) as sess:
            assert sess._config.inter_op_parallelism_threads == 3
            assert sess.run(tf.constant(1.5)) == 1.5
        stock_session().close()  # made by the runtime, past the hook: not intercepted
    assert target.seen == [(False, "", 2)]
    assert given.inter_op_parallelism_threads == 2  # the caller's config is left alone
