"""What every session's runs did, for the run summary: steps, non-finite values, loss scaling.

Both kinds of session report here. An :class:`~tf2npu.runtime.session.NpuSession` calls its
:class:`RunWatch` from its entry points. A stock session (no ``NpuOptimizer``, or ``--no-npu``)
keeps its class, ``tf.compat.v1.Session``; the hook marks it when it is made, and
:func:`install` wraps ``BaseSession``'s run entry points so a marked session's runs are seen
too. Unmarked sessions (an NPU session's inner session, a user's subclass) pass straight through.

Per run, cheaply: whether it is a training step (cached per fetch/target signature, see
:class:`~tf2npu.runtime.loop.TrainingSteps`); whether a fetched scalar float is NaN or Inf (the
values are on the host already: no extra device work; tensors that are not scalars are not
looked at); and, for a step of an ``NPULossScaleOptimizer``, whether it was skipped and the loss
scale after it (:mod:`tf2npu.runtime.lossscale`: tensors the step computes anyway, fetched
with it).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tf2npu.runtime.loop import TrainingSteps
from tf2npu.runtime.lossscale import LossScaleRecord, reached
from tf2npu.runtime.stats import run_stats

__all__ = ["RunWatch", "WatchPlan", "WatchedCallable", "install", "mark", "uninstall"]

_LOG = logging.getLogger("tf2npu.runtime")
_MAX_PLANS = 1024  # signatures kept per session (a script building fetches per step churns)


@dataclass(frozen=True)
class WatchPlan:
    """What to look at in the runs of one (targets, fetches) signature."""

    step: bool
    names: tuple[str, ...]
    """The run's own fetches, by name, in order (the values checked for NaN/Inf)."""
    scales: tuple[LossScaleRecord, ...] = ()
    """Loss-scaled updates this step runs; their tensors are fetched after the run's own."""

    def without_extras(self) -> WatchPlan:
        """This plan fetching nothing extra (a partial run fetches only what its setup named)."""
        return WatchPlan(step=self.step, names=self.names) if self.scales else self

    @property
    def extras(self) -> list[Any]:
        """Tensors to append to the run's fetches (pairs: finite flag, scale)."""
        return [t for r in self.scales for t in (r.finite, r.scale)]


class RunWatch:
    """One session's view: plans per run signature, and what its runs' values say."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self._steps = TrainingSteps(graph)

    def is_step(self, ops: Sequence[Any]) -> bool:
        """Whether a run of ``ops`` (targets and fetched tensors' ops) is a training step."""
        return bool(ops) and self._steps.is_step(ops)

    def plan(self, ops: Sequence[Any], fetches: Sequence[Any], *, step: bool) -> WatchPlan:
        """The plan for a run of ``ops`` fetching the client tensors ``fetches``."""
        scales = reached(self.graph, ops) if step else ()
        return WatchPlan(step=step, names=tuple(t.name for t in fetches), scales=scales)

    def after_run(self, plan: WatchPlan, values: Sequence[Any], *, steps: int) -> list[Any]:
        """Record a finished run (``steps`` training steps); returns the run's own values.

        ``values`` are the fetched values, the plan's extras last; they are removed here.
        """
        stats = run_stats()
        if steps:
            stats.add_steps(steps)
        if plan.scales:
            own = len(values) - 2 * len(plan.scales)
            extra = values[own:]
            finite = all(bool(extra[i]) for i in range(0, len(extra), 2))
            stats.record_loss_scale(float(extra[-1]), skipped=not finite)
            values = values[:own]
        for value in values:  # the common case, all finite, in a few hundred nanoseconds
            if _non_finite(value):
                _report_non_finite(plan.names, values, stats, in_step=steps > 0)
                break
        return list(values)


def _report_non_finite(
    names: Sequence[str], values: Sequence[Any], stats: Any, *, in_step: bool
) -> None:
    bad = [name for name, value in zip(names, values, strict=False) if _non_finite(value)]
    step = stats.steps
    for name in stats.record_nonfinite(bad, step):
        where = f"in training step {step}" if in_step else f"after {step} training steps"
        _LOG.warning(
            "tf2npu: the fetched value of %r is %s %s (first non-finite value of this fetch; "
            "the run goes on, see nonfinite in run_summary.json)",
            name,
            _describe(values[list(names).index(name)]),
            where,
        )


def _non_finite(value: Any) -> bool:
    """Whether ``value`` is a scalar float that is NaN or +-Inf (anything else: False)."""
    if isinstance(value, float | np.floating):  # what a scalar fetch gives (np.float64: float)
        return not math.isfinite(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "f":
        return not math.isfinite(value)
    return False


def _describe(value: Any) -> str:
    number = float(value)
    return "NaN" if math.isnan(number) else ("+Inf" if number > 0 else "-Inf")


class WatchedCallable:
    """A Keras-style callable (``_make_callable_from_options``) whose calls are recorded."""

    def __init__(self, inner: Any, watch: RunWatch, plan: WatchPlan) -> None:
        self._inner = inner
        self._watch = watch
        self._plan = plan

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self._inner(*args, **kwargs)
        values = result if isinstance(result, list) else [result]
        self._watch.after_run(self._plan, values, steps=1 if self._plan.step else 0)
        return result


# -- stock sessions ---------------------------------------------------------------------------

_WATCH = "_tf2npu_watch"
"""Instance attribute of a stock session the hook made: its :class:`_StockWatch` (or None)."""
_lock = threading.Lock()
_saved: dict[str, Any] = {}


def mark(session: Any) -> None:
    """Have ``session`` (a stock session the hook made, before ``__init__``) watched."""
    setattr(session, _WATCH, None)  # the watch needs the graph, known after __init__


class _StockWatch(RunWatch):
    """A stock session's watch, with its plan cache (an NPU session caches its own plans)."""

    def __init__(self, graph: Any) -> None:
        super().__init__(graph)
        self.plans: dict[tuple[int, ...], tuple[WatchPlan, tuple[Any, ...]]] = {}

    def run_plan(self, targets: Sequence[Any], fetches: Sequence[Any]) -> WatchPlan:
        # Keyed by id(): hashing a Tensor asks TF whether it runs eagerly (microseconds). The
        # entry holds the objects, so their ids cannot be reused while it is cached.
        key = (*map(id, targets), -1, *map(id, fetches))
        hit = self.plans.get(key)
        if hit is None:
            if len(self.plans) > _MAX_PLANS:
                self.plans.clear()
            ops = list(targets) + [t.op for t in fetches]
            plan = self.plan(ops, fetches, step=self.is_step(ops))
            hit = self.plans[key] = (plan, (*targets, *fetches))
        return hit[0]


def _watch_of(session: Any) -> _StockWatch | None:
    state = session.__dict__
    if _WATCH not in state:
        return None
    watch: _StockWatch | None = state[_WATCH]
    if watch is None:
        watch = state[_WATCH] = _StockWatch(session._graph)
    return watch


def _do_run(self: Any, handle: Any, target_list: Any, fetch_list: Any, *rest: Any) -> Any:
    watch = _watch_of(self)
    if watch is None or handle is not None:  # partial runs: no step, values come piecewise
        return _saved["_do_run"](self, handle, target_list, fetch_list, *rest)
    plan = watch.run_plan(target_list, fetch_list)
    fetches = list(fetch_list) + plan.extras if plan.scales else fetch_list
    values = _saved["_do_run"](self, handle, target_list, fetches, *rest)
    return watch.after_run(plan, values, steps=1 if plan.step else 0)


def _make_callable(
    self: Any, fetches: Any, feed_list: Any = None, accept_options: bool = False
) -> Any:
    inner = _saved["make_callable"](self, fetches, feed_list, accept_options)
    watch = _watch_of(self)
    if watch is None or feed_list is not None:  # with a feed list it runs through _do_run
        return inner
    from tensorflow.python.client import session as session_lib

    handler = session_lib._FetchHandler(self._graph, fetches, {})
    ops = list(handler.targets()) + [t.op for t in handler.fetches()]
    step = watch.is_step(ops)

    def run_callable(*args: Any, **kwargs: Any) -> Any:
        result = inner(*args, **kwargs)
        if step:  # values come back in the fetches' structure: steps are counted, not checked
            run_stats().add_steps(1)
        return result

    return run_callable


def _make_callable_from_options(self: Any, callable_options: Any) -> Any:
    inner = _saved["_make_callable_from_options"](self, callable_options)
    watch = _watch_of(self)
    if watch is None:
        return inner
    graph = self._graph
    fetches = [graph.as_graph_element(name) for name in callable_options.fetch]
    ops = [t.op for t in fetches] + [
        graph.get_operation_by_name(n) for n in callable_options.target
    ]
    plan = WatchPlan(step=watch.is_step(ops), names=tuple(t.name for t in fetches))
    return WatchedCallable(inner, watch, plan)


_WRAPPERS = {
    "_do_run": _do_run,
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
