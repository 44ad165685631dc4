"""What the sessions of this process did, for the run summary (``run_summary.json``).

The :class:`RunStats` of the :class:`~tf2npu.runtime.context.RuntimeContext` is filled by the
``StatsRecorder`` run instrument (:mod:`tf2npu.runtime.stats_recorder`); ``tf2npu run`` prints and
writes it at exit. The JSON keys are documented in ``docs/run.md`` and stable
(``schema_version`` 1).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tf2npu.artifacts.run_summary import SCHEMA_VERSION, LossScale, PrecisionRow, WarmupTracker
from tf2npu.config.names import closest
from tf2npu.config.options import OPTIONS, NpuOptions, Value

_LOG = logging.getLogger("tf2npu.runtime")

__all__ = ["RunStats", "record_options"]


@dataclass
class RunStats:
    """Counters over the sessions of the process.

    Graph figures (GeOps, host ops, casts, fusions) and options are the NPU sessions'; steps,
    non-finite fetches and loss scaling are counted in stock sessions too (:mod:`.intercept`).
    """

    sessions: int = 0
    """NPU sessions created."""
    stock_sessions: int = 0
    """Sessions left stock (no NpuOptimizer in their config, or ``--no-npu``)."""
    graphs_compiled: int = 0
    """Graph-engine runs: one per session per graph change that reached a run."""
    _latest: dict[object, tuple[int, int, int, Counter[str]]] = field(
        default_factory=dict, repr=False
    )
    """Per session graph, its latest compile: GeOps, host ops, casts inserted, fusions by rule.

    The properties :attr:`geops`, :attr:`host_ops`, :attr:`casts_inserted` and :attr:`fusions`
    sum them over the sessions' graphs."""
    steps: int = 0
    """Training steps run, in NPU and stock sessions: runs applying an optimizer (N per run
    with iterations_per_loop)."""
    nonfinite_step: int | None = None
    """:attr:`steps` when a fetched scalar float was first NaN or Inf (None: never)."""
    nonfinite_fetches: list[str] = field(default_factory=list)
    """Every fetch (tensor name) whose value was ever NaN or Inf, in the order first seen."""
    loss_scale: float | None = None
    """The loss scale after the latest ``NPULossScaleOptimizer`` step (None: none ran)."""
    skipped_steps: int = 0
    """``NPULossScaleOptimizer`` steps skipped because a gradient was not finite."""
    warmup: WarmupTracker = field(default_factory=WarmupTracker, repr=False, compare=False)
    """The leading skipped steps while a dynamic scale came down (``artifacts.run_summary``)."""
    options: dict[str, Value] = field(default_factory=dict)
    """Options set explicitly on NPU sessions (config, run config or ``--option``), by name."""
    options_without_effect: set[str] = field(default_factory=set)
    """Options among :attr:`options` that are recorded but change nothing off the device."""
    options_unknown: set[str] = field(default_factory=set)
    """``parameter_map`` keys that are no adapter option, ignored as the adapter ignores them."""
    written_defaults: set[tuple[str, Value]] = field(default_factory=set)
    """Options and values an API wrote though the user did not set them (``NPUEstimator``
    writes every option, with ``NPURunConfig``'s defaults): left out of :attr:`options`."""
    precision: dict[str, PrecisionRow] = field(default_factory=dict)
    """Per user op, the dtype the precision pass gave it in its latest compile
    (:mod:`tf2npu.runtime.precision_record`), in the order first compiled."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_session(self, *, npu: bool) -> None:
        with self._lock:
            if npu:
                self.sessions += 1
            else:
                self.stock_sessions += 1

    def record_graph(
        self, key: object, *, geops: int, host_ops: int, casts: int, fusions: Mapping[str, int]
    ) -> None:
        """One engine run over the graph of session ``key``; it replaces that graph's figures.

        ``key`` must be unique for the life of the process, not ``id()`` of an object: a freed
        session's id is reused by the next one, whose figures would then replace its own.

        A session's graph grows (Keras, ops built inside a loop) and is compiled again: its
        GeOps, host ops, casts and fusions are those of its latest compile, not a sum.
        """
        with self._lock:
            self.graphs_compiled += 1
            self._latest[key] = (geops, host_ops, casts, Counter(fusions))

    @property
    def geops(self) -> int:
        return sum(v[0] for v in self._latest.values())

    @property
    def host_ops(self) -> int:
        return sum(v[1] for v in self._latest.values())

    @property
    def casts_inserted(self) -> int:
        return sum(v[2] for v in self._latest.values())

    @property
    def fusions(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for v in self._latest.values():
            total.update(v[3])
        return +total

    def record_precision(self, rows: Iterable[PrecisionRow]) -> None:
        """One compile's precision rows; an op compiled again keeps its latest row."""
        with self._lock:
            for row in rows:
                self.precision[row.op] = row

    def add_steps(self, count: int) -> None:
        with self._lock:
            self.steps += count

    def record_nonfinite(self, names: Iterable[str], step: int) -> list[str]:
        """Fetches ``names`` were NaN/Inf at ``step``; returns those never seen so before."""
        with self._lock:
            if self.nonfinite_step is None:
                self.nonfinite_step = step
            new = [name for name in names if name not in self.nonfinite_fetches]
            self.nonfinite_fetches.extend(new)
            return new

    def record_loss_scale(self, scale: float, *, skipped: bool) -> None:
        """One loss-scaled step ran: its scale afterwards, and whether it was skipped."""
        with self._lock:
            self.loss_scale = scale
            self.skipped_steps += int(skipped)
            self.warmup.step(scale, skipped=skipped)

    def add_options(self, explicit: Mapping[str, Value], no_effect: Iterable[str]) -> None:
        with self._lock:
            self.options.update(explicit)
            self.options_without_effect.update(no_effect)

    def note_written_defaults(self, values: Mapping[str, Value]) -> None:
        """``values`` were written into a config as defaults, not by the user."""
        with self._lock:
            self.written_defaults.update(values.items())

    def add_unknown_options(self, names: Iterable[str]) -> list[str]:
        """Record unknown ``parameter_map`` keys; returns those not seen before."""
        with self._lock:
            new = [name for name in names if name not in self.options_unknown]
            self.options_unknown.update(new)
            return new

    def summary(self, *, wall_seconds: float, exit_status: int) -> dict[str, Any]:
        """The ``run_summary.json`` object (keys in the documented order)."""
        with self._lock:
            return {
                "schema_version": SCHEMA_VERSION,
                "sessions": self.sessions,
                "stock_sessions": self.stock_sessions,
                "graphs_compiled": self.graphs_compiled,
                "geops": self.geops,
                "host_ops": self.host_ops,
                "casts_inserted": self.casts_inserted,
                "fusions": dict(sorted(self.fusions.items())),
                "steps": self.steps,
                "nonfinite": self._nonfinite(),
                "loss_scale": (
                    None
                    if self.loss_scale is None
                    else LossScale(
                        self.loss_scale, self.skipped_steps, self.warmup.warmup
                    ).to_json()
                ),
                "precision": [row.to_json() for row in self.precision.values()],
                "wall_seconds": round(wall_seconds, 3),
                "options": dict(sorted(self.options.items())),
                "options_without_effect": sorted(self.options_without_effect),
                "options_unknown": sorted(self.options_unknown),
                "exit_status": exit_status,
            }

    def _nonfinite(self) -> dict[str, Any] | None:
        if self.nonfinite_step is None:
            return None
        return {"first_step": self.nonfinite_step, "fetches": list(self.nonfinite_fetches)}


def record_options(stats: RunStats, options: NpuOptions) -> None:
    """Record one NPU session's options; warn once per process about each unknown key."""
    # NPUEstimator writes every option, defaults included, as the adapter does; the summary
    # lists those the user set: not the option's default, nor a default an API wrote.
    changed: dict[str, Value] = {}
    for name in options.explicit:
        value = options.get(name)
        if value is None or value == OPTIONS[name].default:
            continue
        if (name, value) not in stats.written_defaults:
            changed[name] = value
    stats.add_options(changed, [name for name in options.no_effect if name in changed])
    for name in stats.add_unknown_options(options.unknown):
        close = closest(name, OPTIONS)
        hint = f" (did you mean {close!r}?)" if close else ""
        _LOG.warning(
            "NpuOptimizer parameter_map[%r] is not an option of the adapter%s; ignored, as the "
            "adapter ignores it (tf2npu run --strict-options makes it an error)",
            name,
            hint,
        )
