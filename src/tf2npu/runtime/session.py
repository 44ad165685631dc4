"""``NpuSession``: a ``tf.compat.v1.Session`` that runs the engine's version of its graph.

The session keeps ``sess.graph`` = the user's (client) graph, so Savers, hooks, Keras,
``FileWriter`` and ``as_default`` see the user's names. Every entry point that would reach the
C session instead syncs the :class:`~tf2npu.runtime.mirror.GraphMirror` and hands the call,
mapped by name, to one stock inner session over the mirror graph:

* ``_do_run``: ``run``, ``partial_run``, ``Tensor.eval``, ``Operation.run``, Saver and hooks
  all arrive here with client tensors and ops;
* ``make_callable`` (no feed list: the stock path skips ``run``) and
  ``_make_callable_from_options`` (Keras; its options are name based);
* ``partial_run_setup``, ``list_devices``, ``close``, and ``_extend_graph`` (the sync).

Each call reaches the instruments through :mod:`tf2npu.runtime.intercept`, as a stock
session's do; this module only maps it into the mirror. The client C session is never run:
``_call_tf_sessionrun``/``_call_tf_sessionprun`` raise if reached. Run-time ``OpError``s are
re-raised against the client op the failing node stands for (before the instruments see them).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tensorflow.python.client import session as session_lib

from tf2npu.config.sources import resolve
from tf2npu.errors import InternalError
from tf2npu.runtime import intercept
from tf2npu.runtime.context import context, session_instruments
from tf2npu.runtime.errors import created_at
from tf2npu.runtime.instruments import RunHooks, SessionInfo
from tf2npu.runtime.intercept import HookedCallable, Interception, with_trace
from tf2npu.runtime.loop import check_loop, is_loop_run
from tf2npu.runtime.mirror import GraphMirror
from tf2npu.runtime.protos import npu_session_config, without_npu_optimizer
from tf2npu.runtime.stock import stock_session

__all__ = ["NpuInteractiveSession", "NpuSession"]


_Session: Any = session_lib.Session
_InteractiveSession: Any = session_lib.InteractiveSession


class _NpuSessionMixin:
    """The overrides shared by :class:`NpuSession` and :class:`NpuInteractiveSession`."""

    _graph: Any
    _mirror: GraphMirror
    _inner: Any
    _closed: bool

    def _npu_config(self, config: Any) -> Any:
        return npu_session_config(config) if context().npu_by_default else config

    def _npu_setup(self, target: str, config: Any) -> None:
        ctx = context()
        settings = ctx.settings
        try:
            options = resolve(
                config=config,
                env=os.environ,
                overrides=settings.overrides,
                strict=settings.strict_options,
            )
        except Exception:
            _Session.close(self)
            raise
        self._npu_options = options
        instruments = session_instruments(options, ctx)
        self._mirror = GraphMirror(self._graph, options, ctx, instruments)
        info = SessionInfo(
            ctx.next_session_key(), True, self._graph, options, self._mirror, _reader(self)
        )
        self._mirror.session = info
        self._interception = Interception(ctx, info, instruments)
        self._interception.open(self)
        inner_target, inner_config = self._interception.session_target(
            target, without_npu_optimizer(config)
        )
        self._inner = stock_session(inner_target, self._mirror.graph, inner_config)
        self._loop_checked = False
        self._plans: dict[tuple[tuple[Any, ...], tuple[Any, ...], frozenset[str]], _RunPlan] = {}

    # -- the main entry point ---------------------------------------------------------------

    def _do_run(
        self,
        handle: Any,
        target_list: Sequence[Any],
        fetch_list: Sequence[Any],
        feed_dict: dict[Any, Any],
        options: Any,
        run_metadata: Any,
    ) -> Any:
        mirror = self._mirror
        mirror.sync()
        plan = self._plan(target_list, fetch_list, feed_dict)
        feeds = {mirror.tensor(key.deref().name).ref(): value for key, value in feed_dict.items()}
        inner = self._inner._do_run

        def execute(extras: Sequence[Any], run_options: Any, metadata: Any) -> list[Any]:
            fetches = plan.fetches + list(extras) if extras else plan.fetches
            values: list[Any] = inner(handle, plan.targets, fetches, feeds, run_options, metadata)
            return values

        hooks, repeat = plan.hooks, plan.repeat
        if handle is not None:  # a partial run can fetch only what its setup named: no extras
            hooks, repeat = hooks.without_extras(), 1
        return intercept.run(
            hooks, execute, options, run_metadata, repeat=repeat, map_error=self._client_error
        )

    def _plan(
        self, target_list: Sequence[Any], fetch_list: Sequence[Any], feed_dict: dict[Any, Any]
    ) -> _RunPlan:
        """What a (targets, fetches) signature runs in the mirror, cached until the next sync.

        Mapping names, checking the loop and deciding whether the run is a training step cost
        microseconds each; a training loop repeats one signature, so it pays them once.
        """
        feeds = frozenset(key.deref().name for key in feed_dict)
        key = (tuple(target_list), tuple(fetch_list), feeds)
        syncs = len(self._mirror.syncs)
        plan = self._plans.get(key)
        if plan is None or plan.syncs != syncs:
            if len(self._plans) > intercept.MAX_PLANS:
                self._plans.clear()
            mirror = self._mirror
            repeat = self._repeat(target_list)
            step = repeat > 1 or None
            hooks = self._interception.plan(target_list, fetch_list, feeds, step=step)
            plan = self._plans[key] = _RunPlan(
                targets=[mirror.op(op.name) for op in target_list],
                fetches=[mirror.tensor(t.name) for t in fetch_list],
                repeat=repeat,
                hooks=hooks,
                syncs=syncs,
            )
        return plan

    def _repeat(self, target_list: Sequence[Any]) -> int:
        """N for a run of ``IterationOp`` (after the adapter's checks), else 1."""
        n = self._npu_options.iterations_per_loop
        if n == 1 or not is_loop_run(target_list):
            return 1
        if not self._loop_checked:
            check_loop(self._graph, self._npu_options)
            self._loop_checked = True
        return n

    def _client_error(self, err: Any) -> Any:
        """``err`` re-raised against the client op its node stands for (name and traceback)."""
        name = err.op.name if err.op is not None else None
        origin = self._mirror.origin_of(name) if name else None
        if origin is None:
            return err
        op = self._graph.get_operation_by_name(origin)
        message = err.message
        if name != origin:
            message += f"\n(in node {name!r}, which tf2npu's graph engine made from {origin!r})"
        where = created_at(op)
        if where:
            message += f"\n(op {origin!r} was created at {where})"
        try:
            return type(err)(op.node_def, op, message)
        except TypeError:
            return err

    # -- the other entry points -------------------------------------------------------------

    def _extend_graph(self) -> None:
        self._mirror.sync()

    def make_callable(
        self, fetches: Any, feed_list: Any = None, accept_options: bool = False
    ) -> Any:
        if feed_list is not None:
            # The stock implementation wraps self.run(), which reaches _do_run.
            return _Session.make_callable(self, fetches, feed_list, accept_options)
        mirror = self._mirror
        mirror.sync()
        handler = session_lib._FetchHandler(self._graph, fetches, {})
        hooks = self._interception.plan(handler.targets(), handler.fetches())
        own = [mirror.tensor(t.name) for t in handler.fetches()]
        targets = [mirror.op(op.name) for op in handler.targets()]
        make = self._inner.make_callable

        def build(extras: Sequence[Any], trace: bool) -> Any:
            fetched = own + list(extras)
            if len(fetched) == 1 and not targets:  # keep TF's single-tensor fast path
                single = make(fetched[0], accept_options=accept_options or trace)
                return lambda *args, **kwargs: [single(*args, **kwargs)]
            both = make([fetched, targets], accept_options=accept_options or trace)
            return lambda *args, **kwargs: both(*args, **kwargs)[0]

        hooked = HookedCallable(hooks, build, run_options=True, map_error=self._client_error)
        return lambda *args, **kwargs: handler.build_results(self, hooked(*args, **kwargs))

    def _make_callable_from_options(self, callable_options: Any) -> Any:
        mirror = self._mirror
        mirror.sync()
        fetches = [self._graph.as_graph_element(n) for n in callable_options.fetch]
        targets = [self._graph.get_operation_by_name(n) for n in callable_options.target]
        feeds = frozenset(_tensor_name(name) for name in callable_options.feed)
        hooks = self._interception.plan(targets, fetches, feeds)
        mapped = type(callable_options)()
        mapped.CopyFrom(callable_options)
        for field in (mapped.feed, mapped.fetch):
            for i, name in enumerate(field):
                field[i] = mirror.mirror_name(_tensor_name(name))
        for i, name in enumerate(mapped.target):
            mapped.target[i] = mirror.mirror_name(name)
        for connection in mapped.tensor_connection:
            connection.from_tensor = mirror.mirror_name(_tensor_name(connection.from_tensor))
            connection.to_tensor = mirror.mirror_name(_tensor_name(connection.to_tensor))
        make = self._inner._make_callable_from_options

        def build(extras: Sequence[Any], trace: bool) -> Any:
            return make(with_trace(mapped, extras, trace))

        return HookedCallable(hooks, build, run_options=False, map_error=self._client_error)

    def partial_run_setup(self, fetches: Any, feeds: Any = None) -> Any:
        mirror = self._mirror
        mirror.sync()
        handler = session_lib._FetchHandler(self._graph, fetches, {})
        inner_fetches = [mirror.tensor(t.name) for t in handler.fetches()]
        inner_fetches += [mirror.op(op.name) for op in handler.targets()]
        inner_feeds = [
            mirror.tensor(self._graph.as_graph_element(feed).name) for feed in (feeds or [])
        ]
        return self._inner.partial_run_setup(inner_fetches, inner_feeds)

    def list_devices(self) -> Any:
        return self._inner.list_devices()

    def close(self) -> None:
        inner = getattr(self, "_inner", None)
        if inner is not None and not self._closed:
            self._interception.close()
        if inner is not None:
            inner.close()
        super().close()  # type: ignore[misc]

    # Nothing may reach the client C session: it holds the user's graph, not the engine's.
    def _call_tf_sessionrun(self, *args: Any) -> Any:
        raise InternalError("NpuSession reached its client C session (_call_tf_sessionrun)")

    def _call_tf_sessionprun(self, *args: Any) -> Any:
        raise InternalError("NpuSession reached its client C session (_call_tf_sessionprun)")

    @property
    def mirror(self) -> GraphMirror:
        """The mirror graph this session runs (for tests, benchmarks and reports)."""
        return self._mirror


@dataclass
class _RunPlan:
    """A run signature mapped into the mirror (see ``_NpuSessionMixin._plan``)."""

    targets: list[Any]
    fetches: list[Any]
    repeat: int
    hooks: RunHooks
    syncs: int


class NpuSession(_NpuSessionMixin, _Session):  # type: ignore[misc]
    """A session whose config carries ``NpuOptimizer`` (see the module docstring)."""

    def __init__(self, target: str = "", graph: Any = None, config: Any = None) -> None:
        config = self._npu_config(config)
        super().__init__(target, graph, config)
        self._npu_setup(target, config)


class NpuInteractiveSession(_NpuSessionMixin, _InteractiveSession):  # type: ignore[misc]
    """``InteractiveSession`` with ``NpuOptimizer``: installs itself as the default session."""

    def __init__(self, target: str = "", graph: Any = None, config: Any = None) -> None:
        config = self._npu_config(config)
        super().__init__(target, graph, config)
        self._npu_setup(target, config)


def _reader(session: _NpuSessionMixin) -> Callable[[Sequence[Any]], list[Any]]:
    """Runs client tensors in ``session``'s inner session, which no instrument watches."""
    ref = weakref.ref(session)

    def read(tensors: Sequence[Any]) -> list[Any]:
        live = ref()
        if live is None or live._closed:
            raise ValueError("the session is closed")
        mirror = live._mirror
        mirror.sync()
        values: list[Any] = live._inner.run([mirror.tensor(t.name) for t in tensors])
        return values

    return read


def _tensor_name(name: str) -> str:
    return name if ":" in name else f"{name}:0"
