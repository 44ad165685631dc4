"""Stock sessions' runs reach the instruments; the hooked callables both kinds of session make.

An :class:`~tf2npu.runtime.session.NpuSession` plans its runs itself. A stock session (no
``NpuOptimizer``, or ``--no-npu``) keeps its class, ``tf.compat.v1.Session``; the hook marks it
when it is made, and :func:`install` wraps ``BaseSession``'s run entry points so a marked
session's runs reach the instruments too. Unmarked sessions (an NPU session's inner session, a
user's subclass) pass straight through.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tf2npu.runtime.instruments import RunCall, RunHooks, RunSignature, SessionInfo

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext

__all__ = ["install", "is_marked", "mark", "uninstall"]

_MAX_PLANS = 1024  # signatures kept per session (a script building fetches per step churns)


class CallableCache:
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


def traced(call: RunCall, kwargs: dict[str, Any], *, options: bool) -> tuple[dict[str, Any], Any]:
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


class TracedRun:
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


class HookedCallable:
    """A Keras-style callable (``_make_callable_from_options``) whose calls reach the hooks.

    The inner callable fetches the run's extras after the caller's fetches; they are removed
    from what the caller gets.
    """

    def __init__(self, hooks: RunHooks, inner: CallableCache) -> None:
        self._hooks = hooks
        self._inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self._hooks.begin()
        kwargs, metadata = traced(call, kwargs, options=False)
        result = self._inner.get(call)(*args, **kwargs)
        values = result if isinstance(result, list) else [result]
        own = call.after_run(values, metadata)
        return own if isinstance(result, list) else own[0]


# -- stock sessions ---------------------------------------------------------------------------

_WATCH = "_tf2npu_watch"
"""Instance attribute of a stock session the hook made: its :class:`_StockWatch`."""
_lock = threading.Lock()
_saved: dict[str, Any] = {}


def is_marked(session: Any) -> bool:
    """Whether the hook made ``session`` as a stock session (the user's, not an inner one)."""
    return _watch_of(session) is not None


def mark(session: Any, ctx: RuntimeContext, info: SessionInfo) -> None:
    """Have ``session`` (a stock session the hook made, before ``__init__``) instrumented."""
    setattr(session, _WATCH, _StockWatch(ctx, info))


class _StockWatch:
    """A stock session's instruments, with its plan cache (an NPU session caches its own)."""

    def __init__(self, ctx: RuntimeContext, info: SessionInfo) -> None:
        from tf2npu.runtime.loop import TrainingSteps

        self.ctx = ctx
        self.info = info
        self.instruments = ctx.instruments
        self.steps = TrainingSteps(info.graph)
        self.plans: dict[tuple[int, ...], tuple[RunHooks, tuple[Any, ...]]] = {}
        self.closed = False

    def is_step(self, ops: Sequence[Any]) -> bool:
        return bool(ops) and self.steps.is_step(ops)

    def hooks(
        self, targets: Sequence[Any], fetches: Sequence[Any], feeds: Iterable[Any] = ()
    ) -> RunHooks:
        """The hooks for a run of ``targets`` and ``fetches`` (client objects) feeding the
        tensors ``feeds``."""
        ops = [*targets, *(t.op for t in fetches)]
        fed = frozenset(t.name for t in feeds)
        run = RunSignature(self.info, tuple(targets), tuple(fetches), self.is_step(ops), fed)
        run = dataclasses.replace(run, number=self.ctx.run_number(run.key()))
        return RunHooks.plan(self.instruments, run)

    def run_hooks(
        self, targets: Sequence[Any], fetches: Sequence[Any], feeds: Sequence[Any]
    ) -> RunHooks:
        # Keyed by id(): hashing a Tensor asks TF whether it runs eagerly (microseconds). The
        # entry holds the objects, so their ids cannot be reused while it is cached.
        key = (*map(id, targets), -1, *map(id, fetches), -2, *map(id, feeds))
        hit = self.plans.get(key)
        if hit is None:
            if len(self.plans) > _MAX_PLANS:
                self.plans.clear()
            hooks = self.hooks(targets, fetches, feeds)
            hit = self.plans[key] = (hooks, (*targets, *fetches, *feeds))
        return hit[0]


def _watch_of(session: Any) -> _StockWatch | None:
    if getattr(_quiet, "on", False):
        return None
    watch: _StockWatch | None = session.__dict__.get(_WATCH)
    return watch


def _do_run(
    self: Any, handle: Any, target_list: Any, fetch_list: Any, feed_dict: Any, *rest: Any
) -> Any:
    watch = _watch_of(self)
    if watch is None or handle is not None:  # partial runs: no step, values come piecewise
        return _saved["_do_run"](self, handle, target_list, fetch_list, feed_dict, *rest)
    hooks = watch.run_hooks(target_list, fetch_list, [key.deref() for key in feed_dict])
    call = hooks.begin()
    fetches = [*fetch_list, *call.extras] if call.extras else fetch_list
    try:
        if not call.trace:
            return call.after_run(
                _saved["_do_run"](self, handle, target_list, fetches, feed_dict, *rest)
            )
        run = TracedRun(call, *rest)
        try:
            values = _saved["_do_run"](
                self, handle, target_list, fetches, feed_dict, run.options, run.run_metadata
            )
        finally:
            metadata = run.metadata()
    except Exception as err:
        _raise_if_collective(err)
        raise
    return call.after_run(values, metadata)


def _raise_if_collective(err: Exception) -> None:
    """A failed collective of a multi-rank job is fatal (see distributed.errors)."""
    from tf2npu.runtime.distributed.errors import fatal_failure

    fatal = fatal_failure(err) if hasattr(err, "op") else None
    if fatal is not None:
        raise fatal from err


def _make_callable(
    self: Any, fetches: Any, feed_list: Any = None, accept_options: bool = False
) -> Any:
    watch = _watch_of(self)
    if watch is None or feed_list is not None:  # with a feed list it runs through _do_run
        return _saved["make_callable"](self, fetches, feed_list, accept_options)
    from tensorflow.python.client import session as session_lib

    handler = session_lib._FetchHandler(self._graph, fetches, {})
    hooks = watch.hooks(handler.targets(), handler.fetches())
    make = _saved["make_callable"]
    own, targets = list(handler.fetches()), list(handler.targets())

    def build(extras: Sequence[Any], trace: bool) -> Any:
        flat = make(self, [own + list(extras), targets], None, accept_options or trace)
        return lambda *args, **kwargs: flat(*args, **kwargs)[0]

    inner = CallableCache(build)

    def run_callable(*args: Any, **kwargs: Any) -> Any:
        call = hooks.begin()
        kwargs, metadata = traced(call, kwargs, options=True)
        values = call.after_run(inner.get(call)(*args, **kwargs), metadata)
        return handler.build_results(self, values)

    return run_callable


def _make_callable_from_options(self: Any, callable_options: Any) -> Any:
    watch = _watch_of(self)
    if watch is None:
        return _saved["_make_callable_from_options"](self, callable_options)
    graph = self._graph
    fetches = [graph.as_graph_element(name) for name in callable_options.fetch]
    targets = [graph.get_operation_by_name(n) for n in callable_options.target]
    feeds = [graph.as_graph_element(n) for n in callable_options.feed]
    hooks = watch.hooks(targets, fetches, feeds)
    make = _saved["_make_callable_from_options"]

    def build(extras: Sequence[Any], trace: bool) -> Any:
        return make(self, with_trace(callable_options, extras, trace))

    return HookedCallable(hooks, CallableCache(build))


def _close(self: Any) -> None:
    watch = _watch_of(self)
    if watch is not None and not watch.closed and not self._closed:
        watch.closed = True
        for instrument in watch.instruments:
            instrument.on_session_close(watch.info)
        watch.ctx.closed(watch.info)
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
