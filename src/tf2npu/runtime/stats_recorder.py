"""What every session's runs did, for the run summary: steps, non-finite values, loss scaling.

:class:`StatsRecorder` is the run instrument that fills the context's
:class:`~tf2npu.runtime.stats.RunStats`; NPU and stock sessions reach it alike, through
:mod:`tf2npu.runtime.intercept`.

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
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tf2npu.runtime.instruments import RunHook, RunInstrument, RunSignature, SessionInfo, SyncEvent
from tf2npu.runtime.lossscale import LossScaleRecord, reached
from tf2npu.runtime.stats import RunStats, record_options

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext

__all__ = ["StatsRecorder"]

_LOG = logging.getLogger("tf2npu.runtime")


class StatsRecorder(RunInstrument):
    """Fills ``ctx.stats``: sessions, options, graph figures, steps, NaN/Inf, loss scaling.

    It writes to whatever :class:`RunStats` the context holds at the time, so a runner that
    resets the counters gets the runs that follow.
    """

    def __init__(self, ctx: RuntimeContext) -> None:
        self._ctx = ctx
        self._figures: dict[int, tuple[int, int, int, Counter[str]]] = {}
        self._lock = threading.Lock()

    def on_session(self, session: SessionInfo) -> None:
        stats = self._ctx.stats
        stats.add_session(npu=session.npu)
        if session.options is not None:
            record_options(stats, session.options)

    def on_sync(self, event: SyncEvent) -> None:
        """This session's graph figures: a full compile's, or added to them (a small change)."""
        summary, stubs = event.compiled.summary, event.stubs
        host = sum(1 for op in summary.host_ops if stubs is None or op.name not in stubs)
        figures = (len(summary.geops), host, summary.casts_inserted, Counter(summary.fusions))
        with self._lock:
            if stubs is not None and event.session.key in self._figures:
                geops, host_ops, casts, fusions = self._figures[event.session.key]
                figures = (
                    geops + figures[0], host_ops + figures[1], casts + figures[2],
                    fusions + figures[3],
                )  # fmt: skip
            self._figures[event.session.key] = figures
        geops, host_ops, casts, fusions = figures
        self._ctx.stats.record_graph(
            event.session.key, geops=geops, host_ops=host_ops, casts=casts, fusions=fusions
        )

    def plan(self, run: RunSignature) -> RunHook:
        ops = [*run.targets, *(t.op for t in run.fetches)]
        scales = reached(run.session.graph, ops) if run.step else ()
        return _StatsHook(self._ctx, run, scales)


class _StatsHook(RunHook):
    def __init__(
        self, ctx: RuntimeContext, run: RunSignature, scales: tuple[LossScaleRecord, ...]
    ) -> None:
        self._ctx = ctx
        self._step = run.step
        self._names = tuple(t.name for t in run.fetches)
        self._scales = scales
        session = run.session
        self.extras = [session.executed_tensor(t.name) for r in scales for t in (r.finite, r.scale)]

    def without_extras(self) -> RunHook:
        hook = _StatsHook.__new__(_StatsHook)
        hook.__dict__.update(self.__dict__, _scales=(), extras=[])
        return hook

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        stats = self._ctx.stats
        if self._step:
            stats.add_steps(1)
        if self._scales:
            finite = all(bool(extras[i]) for i in range(0, len(extras), 2))
            stats.record_loss_scale(float(extras[-1]), skipped=not finite)
        for value in values:  # the common case, all finite, in a few hundred nanoseconds
            if _non_finite(value):
                _report_non_finite(self._names, values, stats, in_step=self._step)
                break


def _report_non_finite(
    names: Sequence[str], values: Sequence[Any], stats: RunStats, *, in_step: bool
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
