"""The one place a session's entry points become instrument calls, for NPU and stock sessions.

Every session the hook made has an :class:`Interception`: its :class:`SessionInfo`, its
instruments and its training-step cache. Through it

* the session opens (``on_session``) and closes (``on_session_close``), once each;
* its target and config are set (:meth:`Interception.session_target`: each instrument's
  ``session_target``, a multi-rank job's server among them);
* each run signature is planned (:meth:`Interception.plan`: a numbered ``RunSignature`` and the
  instruments' :class:`RunHooks`);
* each run goes plan -> run -> ``after_run`` (:func:`run`, the ``_do_run`` of ``run``,
  ``partial_run``, ``Tensor.eval``, ``Operation.run``, Saver and hooks; :class:`HookedCallable`,
  ``make_callable`` without a feed list and Keras' ``_make_callable_from_options``: with a feed
  list TensorFlow's callable calls ``run``), and a failed run's ``OpError`` goes to every
  instrument's ``on_run_error``, after the session's own mapping (an NPU session raises it
  against the client op).

An :class:`~tf2npu.runtime.session.NpuSession` overrides those entry points itself and hands
each call here with its mapping into the mirror graph. A stock session (no ``NpuOptimizer``,
or ``--no-npu``) keeps its class, ``tf.compat.v1.Session``: the hook marks it when it is made
(:func:`mark`), and :func:`install` wraps ``BaseSession``'s entry points so a marked session's
calls come here too; unmarked sessions (an NPU session's inner session, a user's subclass) pass
straight through, and so do a stock session's partial runs (an NPU session's keep the hooks that
fetch nothing extra).
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tf2npu.runtime.instruments import RunCall, RunHooks, RunInstrument, RunSignature, SessionInfo

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext

__all__ = [
    "MAX_PLANS",
    "HookedCallable",
    "Interception",
    "install",
    "interception_of",
    "mark",
    "reader",
    "run",
    "uninstall",
    "with_trace",
]

MAX_PLANS = 1024
"""Signatures a session keeps planned (a script building fetches per step churns)."""

ErrorMap = Callable[[Exception], Exception]
"""A session's own mapping of a run's ``OpError`` (an NPU session's: onto the client op)."""


class Interception:
    """One session as the entry points reach its instruments (see the module docstring)."""

    def __init__(
        self, ctx: RuntimeContext, info: SessionInfo, instruments: Sequence[RunInstrument]
    ) -> None:
        from tf2npu.runtime.loop import TrainingSteps

        self.ctx = ctx
        self.info = info
        self.instruments = list(instruments)
        self._steps = TrainingSteps(info.graph)
        self._plans: dict[tuple[int, ...], tuple[RunHooks, tuple[Any, ...]]] = {}
        self._closed = False

    def open(self, session: Any) -> None:
        """``session`` exists: it is open in the context, and every instrument is told."""
        self.ctx.opened(self.info, session)
        for instrument in self.instruments:
            instrument.on_session(self.info)

    def close(self) -> None:
        """The session is about to close (it can still run): every instrument is told, once."""
        if self._closed:
            return
        self._closed = True
        for instrument in self.instruments:
            instrument.on_session_close(self.info)
        self.ctx.closed(self.info)

    def session_target(self, target: str, config: Any) -> tuple[str, Any]:
        """The target and config the session runs with, as each instrument in turn sets them."""
        for instrument in self.instruments:
            target, config = instrument.session_target(self.info, target, config)
        return target, config

    def plan(
        self,
        targets: Sequence[Any],
        fetches: Sequence[Any],
        feeds: frozenset[str] = frozenset(),
        *,
        step: bool | None = None,
    ) -> RunHooks:
        """The hooks for runs of ``targets`` and ``fetches`` (client objects) feeding the
        client tensors named ``feeds``; ``step`` None: whether the run applies an optimizer."""
        if step is None:
            ops = [*targets, *(t.op for t in fetches)]
            step = bool(ops) and self._steps.is_step(ops)
        run = RunSignature(self.info, tuple(targets), tuple(fetches), step, feeds)
        run = dataclasses.replace(run, number=self.ctx.run_number(run.key()))
        return RunHooks.plan(self.instruments, run)

    def cached_plan(
        self, targets: Sequence[Any], fetches: Sequence[Any], feeds: Sequence[Any]
    ) -> RunHooks:
        """:meth:`plan`, once per (targets, fetches, fed tensors) objects: a stock session's
        ``_do_run`` (an NPU session caches its plans with their mapping into the mirror)."""
        # Keyed by id(): hashing a Tensor asks TF whether it runs eagerly (microseconds). The
        # entry holds the objects, so their ids cannot be reused while it is cached.
        key = (*map(id, targets), -1, *map(id, fetches), -2, *map(id, feeds))
        hit = self._plans.get(key)
        if hit is None:
            if len(self._plans) > MAX_PLANS:
                self._plans.clear()
            hooks = self.plan(targets, fetches, frozenset(t.name for t in feeds))
            hit = self._plans[key] = (hooks, (*targets, *fetches, *feeds))
        return hit[0]


Execute = Callable[[Sequence[Any], Any, Any], list[Any]]
"""Runs a signature once: ``(extras, options, run_metadata)`` -> its values, the extras' last."""


def run(
    hooks: RunHooks,
    execute: Execute,
    options: Any,
    run_metadata: Any,
    *,
    repeat: int = 1,
    map_error: ErrorMap | None = None,
) -> list[Any]:
    """``repeat`` runs of one signature (``_do_run``'s ``options`` and ``run_metadata``
    buffers; the caller's metadata is filled by the last run): the run's own values.

    Raises:
        Exception: a failed run's ``OpError`` as ``map_error`` and the instruments' map it.
    """
    try:
        for _ in range(repeat - 1):
            _run_once(hooks.begin(), execute, options, None)
        return _run_once(hooks.begin(), execute, options, run_metadata)
    except Exception as err:
        raised = _run_error(hooks, err, map_error)
        if raised is err:
            raise
        raise raised  # noqa: B904 (its cause is set by _run_error)


def _run_once(call: RunCall, execute: Execute, options: Any, run_metadata: Any) -> list[Any]:
    """One run with ``call``'s extras (traced when it asks); its own values."""
    if not call.trace:
        return call.after_run(execute(call.extras, options, run_metadata))
    traced_run = _TracedRun(call, options, run_metadata)
    try:
        values = execute(call.extras, traced_run.options, traced_run.run_metadata)
    finally:
        metadata = traced_run.metadata()
    return call.after_run(values, metadata)


def _run_error(hooks: RunHooks, err: Exception, map_error: ErrorMap | None) -> Exception:
    """What a run that raised ``err`` raises: ``err`` itself unless it is an ``OpError``,
    else mapped by the session (``from None``), then by the instruments (from the mapped one)."""
    from tensorflow.python.framework import errors

    if not isinstance(err, errors.OpError):
        return err
    mapped = map_error(err) if map_error is not None else err
    raised = hooks.on_run_error(mapped)
    if raised is not mapped:
        raised.__cause__ = mapped
    elif mapped is not err:
        mapped.__cause__ = None
        mapped.__suppress_context__ = True
    return raised


class _CallableCache:
    """The inner callables of one hooked callable, one per fetch list and trace a run asks for.

    A callable's fetches are fixed when it is made, so a run that fetches other extras (a dump
    on some steps only) or is traced needs its own; each is made once, on first need.
    """

    def __init__(self, build: Callable[[Sequence[Any], bool], Any]) -> None:
        self._build = build
        self._made: dict[tuple[tuple[int, ...], bool], Any] = {}

    def get(self, call: RunCall) -> Any:
        key = (call.extras_key(), call.trace)
        inner = self._made.get(key)
        if inner is None:
            inner = self._made[key] = self._build(call.extras, call.trace)
        return inner


class HookedCallable:
    """A callable whose calls reach the hooks: ``build(extras, trace)`` makes the inner
    callable of a call, fetching the run's extras after the caller's fetches (they are removed
    from what the caller gets).

    ``run_options``: the inner callable takes ``options`` (``make_callable``), so a traced call
    passes ``RunOptions`` asking for a full trace; a Keras callable's are in its
    ``CallableOptions`` (:func:`with_trace`).
    """

    def __init__(
        self,
        hooks: RunHooks,
        build: Callable[[Sequence[Any], bool], Any],
        *,
        run_options: bool,
        map_error: ErrorMap | None = None,
    ) -> None:
        self._hooks = hooks
        self._inner = _CallableCache(build)
        self._run_options = run_options
        self._map_error = map_error

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self._hooks.begin()
        kwargs, metadata = _traced(call, kwargs, options=self._run_options)
        try:
            result = self._inner.get(call)(*args, **kwargs)
        except Exception as err:
            raised = _run_error(self._hooks, err, self._map_error)
            if raised is err:
                raise
            raise raised  # noqa: B904 (its cause is set by _run_error)
        values = result if isinstance(result, list) else [result]
        own = call.after_run(values, metadata)
        return own if isinstance(result, list) else own[0]


def _traced(call: RunCall, kwargs: dict[str, Any], *, options: bool) -> tuple[dict[str, Any], Any]:
    """``kwargs`` for an inner callable, with a ``RunMetadata`` to fill when ``call`` is traced
    (and, when ``options``, ``RunOptions`` asking for a full trace); the caller's own
    ``run_metadata`` is used when it passed one."""
    if not call.trace:
        return kwargs, None
    from tensorflow.core.protobuf import config_pb2

    metadata = kwargs.get("run_metadata") or config_pb2.RunMetadata()
    kwargs = {**kwargs, "run_metadata": metadata}
    if options:
        run_options = config_pb2.RunOptions()
        if kwargs.get("options") is not None:
            run_options.CopyFrom(kwargs["options"])
        run_options.trace_level = config_pb2.RunOptions.FULL_TRACE
        kwargs["options"] = run_options
    return kwargs, metadata


class _TracedRun:
    """The ``options`` and ``run_metadata`` buffers of one ``_do_run`` (``TF_Buffer``s, as
    ``BaseSession._run`` passes them), asking for a full trace when the call is traced.

    ``metadata()`` parses what the run wrote and frees the buffers this object made; the
    caller's own buffers are left to the caller.
    """

    def __init__(self, call: RunCall, options: Any, run_metadata: Any) -> None:
        self.options, self.run_metadata = options, run_metadata
        self._made: list[Any] = []
        if not call.trace:
            return
        from tensorflow.core.protobuf import config_pb2
        from tensorflow.python.client import pywrap_tf_session as tf_session

        run_options = config_pb2.RunOptions()
        if options is not None:
            run_options.ParseFromString(tf_session.TF_GetBuffer(options))
        run_options.trace_level = config_pb2.RunOptions.FULL_TRACE
        self.options = tf_session.TF_NewBufferFromString(run_options.SerializeToString())
        self._made.append(self.options)
        if run_metadata is None:
            self.run_metadata = tf_session.TF_NewBuffer()
            self._made.append(self.run_metadata)

    def metadata(self) -> Any:
        """The run's ``RunMetadata`` (None when it was not traced); frees our buffers."""
        if not self._made:
            return None
        from tensorflow.core.protobuf import config_pb2
        from tensorflow.python.client import pywrap_tf_session as tf_session

        metadata = config_pb2.RunMetadata()
        try:
            metadata.ParseFromString(tf_session.TF_GetBuffer(self.run_metadata))
        finally:
            for buffer in self._made:
                tf_session.TF_DeleteBuffer(buffer)
            self._made.clear()
        return metadata


def with_trace(callable_options: Any, extras: Sequence[Any], trace: bool) -> Any:
    """A copy of ``CallableOptions`` fetching ``extras`` too, traced when ``trace``."""
    options = type(callable_options).FromString(callable_options.SerializeToString())
    options.fetch.extend(t.name for t in extras)
    if trace:
        from tensorflow.core.protobuf import config_pb2

        options.run_options.trace_level = config_pb2.RunOptions.FULL_TRACE
    return options


# -- stock sessions ---------------------------------------------------------------------------

_MARK = "_tf2npu_interception"
"""Instance attribute of a stock session the hook made: its :class:`Interception`."""
_lock = threading.Lock()
_saved: dict[str, Any] = {}


def mark(session: Any, interception: Interception) -> None:
    """Have the stock ``session`` (made by the hook, before ``__init__``) intercepted; it is
    opened (:meth:`Interception.open`)."""
    setattr(session, _MARK, interception)
    interception.open(session)


def interception_of(session: Any) -> Interception | None:
    """The interception of a stock session the hook marked (None: pass it straight through)."""
    if getattr(_quiet, "on", False):
        return None
    interception: Interception | None = session.__dict__.get(_MARK)
    return interception


def _do_run(
    self: Any, handle: Any, target_list: Any, fetch_list: Any, feed_dict: Any, *rest: Any
) -> Any:
    interception = interception_of(self)
    if interception is None or handle is not None:  # partial runs: values come piecewise
        return _saved["_do_run"](self, handle, target_list, fetch_list, feed_dict, *rest)
    hooks = interception.cached_plan(target_list, fetch_list, [key.deref() for key in feed_dict])
    stock = _saved["_do_run"]

    def execute(extras: Sequence[Any], options: Any, run_metadata: Any) -> list[Any]:
        fetches = [*fetch_list, *extras] if extras else fetch_list
        values: list[Any] = stock(
            self, None, target_list, fetches, feed_dict, options, run_metadata
        )
        return values

    return run(hooks, execute, *rest)


def _make_callable(
    self: Any, fetches: Any, feed_list: Any = None, accept_options: bool = False
) -> Any:
    interception = interception_of(self)
    if interception is None or feed_list is not None:  # with a feed list it runs _do_run
        return _saved["make_callable"](self, fetches, feed_list, accept_options)
    from tensorflow.python.client import session as session_lib

    handler = session_lib._FetchHandler(self._graph, fetches, {})
    hooks = interception.plan(handler.targets(), handler.fetches())
    make = _saved["make_callable"]
    own, targets = list(handler.fetches()), list(handler.targets())

    def build(extras: Sequence[Any], trace: bool) -> Any:
        flat = make(self, [own + list(extras), targets], None, accept_options or trace)
        return lambda *args, **kwargs: flat(*args, **kwargs)[0]

    hooked = HookedCallable(hooks, build, run_options=True)
    return lambda *args, **kwargs: handler.build_results(self, hooked(*args, **kwargs))


def _make_callable_from_options(self: Any, callable_options: Any) -> Any:
    interception = interception_of(self)
    if interception is None:
        return _saved["_make_callable_from_options"](self, callable_options)
    graph = self._graph
    fetches = [graph.as_graph_element(name) for name in callable_options.fetch]
    targets = [graph.get_operation_by_name(n) for n in callable_options.target]
    feeds = frozenset(graph.as_graph_element(n).name for n in callable_options.feed)
    hooks = interception.plan(targets, fetches, feeds)
    make = _saved["_make_callable_from_options"]

    def build(extras: Sequence[Any], trace: bool) -> Any:
        return make(self, with_trace(callable_options, extras, trace))

    return HookedCallable(hooks, build, run_options=False)


def _close(self: Any) -> None:
    interception = interception_of(self)
    if interception is not None and not self._closed:
        interception.close()
    _saved["close"](self)


_quiet = threading.local()
"""``_quiet.on``: this thread runs a marked session outside its instruments (:func:`reader`)."""


def reader(session: Any) -> Callable[[Sequence[Any]], list[Any]]:
    """Runs client tensors in the stock ``session`` without reaching its instruments."""
    ref = weakref.ref(session)

    def read(tensors: Sequence[Any]) -> list[Any]:
        live = ref()
        if live is None or live._closed:
            raise ValueError("the session is closed")
        _quiet.on = True
        try:
            values: list[Any] = live.run(list(tensors))
        finally:
            _quiet.on = False
        return values

    return read


_WRAPPERS = {
    "_do_run": _do_run,
    "close": _close,
    "make_callable": _make_callable,
    "_make_callable_from_options": _make_callable_from_options,
}


def install() -> None:
    """Wrap ``BaseSession``'s run entry points for marked sessions (idempotent)."""
    from tensorflow.python.client import session as session_lib

    with _lock:
        if _saved:
            return
        for name, wrapper in _WRAPPERS.items():
            _saved[name] = getattr(session_lib.BaseSession, name)
            setattr(session_lib.BaseSession, name, wrapper)


def uninstall() -> None:
    """Put ``BaseSession``'s own entry points back (tests)."""
    from tensorflow.python.client import session as session_lib

    with _lock:
        for name, original in _saved.items():
            setattr(session_lib.BaseSession, name, original)
        _saved.clear()
