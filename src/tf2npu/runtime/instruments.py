"""Run instruments: the one seam through which tools see what sessions compile and run.

The graph engine has :mod:`tf2npu.graph.instruments` around its passes; this is the same shape
around sessions (TVM's ``instrument.py``). An instrument is told when a session starts, when the
engine compiled a graph (its decisions) and when the mirror imported it (the names it runs
under); it may set where a session runs (:meth:`RunInstrument.session_target`), *plan* each run
signature (name extra tensors to fetch with the run and read their values after it) and map a
failed run's error (:meth:`RunInstrument.on_run_error`). The run summary counters,
``check_result.tf.json``, ``PRINT_MODEL`` dumps, tensor dumps and multi-rank jobs are all
instruments, reached through :mod:`tf2npu.runtime.intercept`; ``session.py`` knows none of them.

Extra fetches only ever name tensors the run computes anyway (an instrument must not make a run
execute more), so fetching them changes no value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tf2npu.artifacts.gegraph import GeGraph
    from tf2npu.config.options import NpuOptions
    from tf2npu.graph.ir import Graph
    from tf2npu.graph.passes.infra import PassInstrument
    from tf2npu.graph.report.summary import GraphSummary
    from tf2npu.runtime.compile import Compiled
    from tf2npu.runtime.mirror import GraphMirror

__all__ = [
    "CompileEvent",
    "RunCall",
    "RunHook",
    "RunHooks",
    "RunInstrument",
    "RunSignature",
    "SessionInfo",
    "SyncEvent",
]


@dataclass(frozen=True, eq=False)
class SessionInfo:
    """One session as instruments see it."""

    key: int
    """Unique for the life of the process (unlike ``id()``)."""
    npu: bool
    graph: Any
    """The client (user's) ``tf.Graph``."""
    options: NpuOptions | None = None
    """The session's resolved options (NPU sessions)."""
    mirror: GraphMirror | None = None
    """The graph the session executes when it is not ``graph`` (NPU sessions)."""
    reader: Callable[[Sequence[Any]], list[Any]] | None = field(default=None, repr=False)
    """Set by the session: see :meth:`read`."""

    def read(self, tensors: Sequence[Any]) -> list[Any]:
        """The values of client ``tensors``, run in the session outside the instruments (no
        instrument sees the run; it is not a step): for an instrument reading variables at
        :meth:`RunInstrument.on_session_close` or :meth:`RunInstrument.close`."""
        if self.reader is None:
            raise ValueError(f"session {self.key} cannot be read (it is gone)")
        return self.reader(tensors)

    def executed_tensor(self, name: str) -> Any:
        """The tensor the session executes for the client tensor ``name``."""
        if self.mirror is not None:
            return self.mirror.tensor(name)
        return self.graph.get_tensor_by_name(name)

    @property
    def executed_graph(self) -> Any:
        """The ``tf.Graph`` the session runs (the mirror for an NPU session)."""
        return self.mirror.graph if self.mirror is not None else self.graph


@dataclass(frozen=True, eq=False)
class CompileEvent:
    """The engine ran over a client graph (emitted before a failing compile raises)."""

    session: SessionInfo | None
    graph_num: int
    graph: Graph
    """The IR after every pass: its nodes carry the engine's decisions."""
    summary: GraphSummary
    stubs: frozenset[str] | None
    """For a small change compiled on its own (:mod:`tf2npu.runtime.delta`), the stand-ins of
    the earlier nodes and the placements they alone caused; None for a whole-graph compile."""


@dataclass(frozen=True, eq=False)
class SyncEvent:
    """The mirror imported a compile: ``renamed`` maps IR names to the names it runs under."""

    session: SessionInfo
    graph_num: int
    compiled: Compiled
    renamed: Mapping[str, str]
    stubs: frozenset[str] | None

    @functools.cached_property
    def ge_graphs(self) -> list[GeGraph]:
        """The compile's GeOps as graph JSON models, under the names the mirror runs them
        (built once per sync, however many instruments read them)."""
        from tf2npu.graph.report.ge_graph import ge_graphs

        return [_renamed(graph, self.renamed) for graph in ge_graphs(self.compiled.graph)]


def _renamed(graph: GeGraph, renamed: Mapping[str, str]) -> GeGraph:
    """``graph`` with the IR names the mirror imported under other names replaced."""
    if not renamed:
        return graph

    def name(text: str) -> str:
        node, sep, index = text.rpartition(":")
        return f"{renamed.get(node, node)}{sep}{index}" if sep else renamed.get(text, text)

    ops = tuple(
        replace(op, name=renamed.get(op.name, op.name), inputs=tuple(map(name, op.inputs)))
        for op in graph.ops
    )
    return replace(graph, ops=ops)


@dataclass(frozen=True, eq=False)
class RunSignature:
    """A (targets, fetches) signature of one session, planned once and reused per run."""

    session: SessionInfo
    targets: tuple[Any, ...]
    """Client ops."""
    fetches: tuple[Any, ...]
    """Client tensors."""
    step: bool
    """Whether a run of it is a training step (it applies an optimizer)."""
    feeds: frozenset[str] = frozenset()
    """Client tensor names the run feeds (a fed tensor is not computed, and cannot be fetched)."""
    number: int = 0
    """The signature's number in the process (1 = the first signature any session ran), the
    same in an NPU run and a ``--no-npu`` run of one script: dumps pair by it."""

    def key(self) -> tuple[Any, ...]:
        """What identifies the signature within the process."""
        return (
            self.session.key,
            tuple(op.name for op in self.targets),
            tuple(t.name for t in self.fetches),
            tuple(sorted(self.feeds)),
        )

    def executed_feeds(self) -> frozenset[str]:
        """The names of the fed tensors in the executed graph."""
        mirror = self.session.mirror
        if mirror is None:
            return self.feeds
        return frozenset(mirror.tensor(name).name for name in self.feeds)

    def executed_roots(self) -> list[Any]:
        """The executed graph's ops the run asks for (targets and fetched tensors' ops)."""
        session = self.session
        if session.mirror is None:
            return [*self.targets, *(t.op for t in self.fetches)]
        mirror = session.mirror
        return [mirror.op(op.name) for op in self.targets] + [
            mirror.tensor(t.name).op for t in self.fetches
        ]


class RunHook:
    """What an instrument does around the runs of one signature.

    ``extras`` are tensors of the executed graph the hook may fetch. Before each run the
    session asks :meth:`extras_for_run` which of them to fetch this time (all of them, by
    default) and :meth:`trace` whether to trace the run; :meth:`after_run` then gets the run's
    own values and the values of the extras asked for, in that order. A traced run's
    ``RunMetadata`` (step stats) reaches :meth:`on_metadata` first.
    """

    extras: Sequence[Any] = ()

    def extras_for_run(self) -> Sequence[Any]:
        """The extras to fetch with the next run: ``self.extras`` or a part of it (``()`` to
        fetch nothing, e.g. on a step a dump does not cover)."""
        return self.extras

    def trace(self) -> bool:
        """Whether the next run should be traced (``RunOptions.FULL_TRACE``)."""
        return False

    def on_metadata(self, run_metadata: Any) -> None:
        """A run this hook asked to trace finished: its ``RunMetadata`` proto."""

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        """One run finished (a loop of ``iterations_per_loop`` calls this per iteration)."""

    def without_extras(self) -> RunHook | None:
        """This hook for a run that can fetch nothing extra (a partial run); None drops it."""
        return None if self.extras else self


def _varies(hook: RunHook) -> bool:
    """Whether ``hook`` decides its extras or tracing per run (else one plan serves every run)."""
    kind = type(hook)
    return kind.extras_for_run is not RunHook.extras_for_run or kind.trace is not RunHook.trace


class RunInstrument:
    """Base class: every hook does nothing. Subclasses override what they need."""

    def on_session(self, session: SessionInfo) -> None:
        """A session was created (NPU or stock)."""

    def session_target(self, session: SessionInfo, target: str, config: Any) -> tuple[str, Any]:
        """Where ``session`` runs: the target and ``ConfigProto`` (or None) it was given, or
        others (a multi-rank job moves local sessions onto its rank's server). An NPU session
        asks for its inner session, whose config carries no ``NpuOptimizer``; a stock session
        for itself, before TensorFlow makes its C session."""
        return target, config

    def pass_instruments(self, options: NpuOptions) -> list[PassInstrument[Any]]:
        """Instruments to put around the graph engine's passes for a compile."""
        return []

    def on_compile(self, event: CompileEvent) -> None:
        """The engine compiled a client graph."""

    def on_sync(self, event: SyncEvent) -> None:
        """The mirror imported a compiled graph."""

    def plan(self, run: RunSignature) -> RunHook | None:
        """The hook for runs of ``run`` (None: nothing to do)."""
        return None

    def on_run_error(self, run: RunSignature, error: Exception) -> Exception | None:
        """A run of ``run`` (``run``, a callable's call) failed with the ``OpError`` ``error``,
        already raised against the client op for an NPU session; no hook saw ``after_run``.
        Returns the error to raise instead (the next instrument sees that one), or None."""
        return None

    def on_session_close(self, session: SessionInfo) -> None:
        """``session`` is about to close: it can still run (read its variables here)."""

    def close(self) -> None:
        """The process is done with sessions (``tf2npu run`` calls it at exit): flush.

        Sessions the script never closed are still open (``RuntimeContext.open_sessions``)."""

    def summary_part(self) -> dict[str, Any]:
        """This instrument's sections of the run summary, after :meth:`close`: field name of
        :class:`~tf2npu.artifacts.run_summary.RunSummary` → its JSON value (none by default;
        :meth:`RunSummary.from_parts` says how parts combine)."""
        return {}


@dataclass(frozen=True, eq=False)
class RunCall:
    """One run of a signature: the extras to fetch with it and whether it is traced."""

    hooks: Sequence[RunHook]
    extras: Sequence[Any]
    spans: Sequence[tuple[int, int]]
    tracers: Sequence[RunHook] = ()
    """The hooks that asked for this run to be traced (each is asked once, at :meth:`begin`)."""

    @property
    def trace(self) -> bool:
        """Whether the run is traced (``RunOptions.FULL_TRACE``)."""
        return bool(self.tracers)

    def extras_key(self) -> tuple[int, ...]:
        """What identifies this call's fetch list (callables are built once per key)."""
        return tuple(map(id, self.extras))

    def after_run(self, values: Sequence[Any], run_metadata: Any = None) -> list[Any]:
        """Hand each hook its values (and a traced run's metadata to the hooks that asked);
        returns the run's own values, the extras removed."""
        own = len(values) - len(self.extras)
        run_values, extra_values = values[:own], values[own:]
        if run_metadata is not None:
            for hook in self.tracers:
                hook.on_metadata(run_metadata)
        for hook, (start, end) in zip(self.hooks, self.spans, strict=True):
            hook.after_run(run_values, extra_values[start:end])
        return list(run_values)


def _call(
    hooks: Sequence[RunHook], per_hook: Sequence[Sequence[Any]], tracers: Sequence[RunHook] = ()
) -> RunCall:
    extras: list[Any] = []
    spans = []
    for wanted in per_hook:
        spans.append((len(extras), len(extras) + len(wanted)))
        extras.extend(wanted)
    return RunCall(hooks, extras, spans, tuple(tracers))


@dataclass
class RunHooks:
    """The hooks of several instruments for one signature, as one.

    :meth:`begin` gives the :class:`RunCall` of the next run. When no hook varies per run (the
    common case) it is the same object every time, so a training loop pays nothing per step.
    """

    hooks: Sequence[RunHook] = ()
    _fixed: RunCall | None = None
    run: RunSignature | None = None
    """The signature planned (None: hooks made by hand, in tests)."""
    instruments: Sequence[RunInstrument] = ()
    """Every instrument asked to plan it, hook or not: each sees a failed run's error."""

    @classmethod
    def plan(cls, instruments: Sequence[RunInstrument], run: RunSignature) -> RunHooks:
        hooks = [h for h in (i.plan(run) for i in instruments) if h is not None]
        varies = any(_varies(hook) for hook in hooks)
        fixed = None if varies else _call(hooks, [hook.extras for hook in hooks])
        return cls(hooks, fixed, run, tuple(instruments))

    @property
    def extras(self) -> list[Any]:
        """Every tensor any hook may fetch (the union of all runs' extras)."""
        return [tensor for hook in self.hooks for tensor in hook.extras]

    @property
    def fixed(self) -> RunCall | None:
        """The call every run makes, when no hook varies per run."""
        return self._fixed

    def begin(self) -> RunCall:
        """What the next run fetches besides its own values, and whether it is traced."""
        if self._fixed is not None:
            return self._fixed
        per_hook = [hook.extras_for_run() for hook in self.hooks]
        return _call(self.hooks, per_hook, [hook for hook in self.hooks if hook.trace()])

    def without_extras(self) -> RunHooks:
        """The hooks that fetch nothing extra (a partial run fetches only what its setup
        named, and cannot be traced)."""
        hooks = [h for h in (hook.without_extras() for hook in self.hooks) if h is not None]
        return RunHooks(hooks, _call(hooks, [()] * len(hooks)), self.run, self.instruments)

    def on_run_error(self, error: Exception) -> Exception:
        """The error a failed run raises: ``error`` as each instrument in turn maps it."""
        if self.run is None:
            return error
        for instrument in self.instruments:
            error = instrument.on_run_error(self.run, error) or error
        return error
