"""``RuntimeContext``: everything the sessions of this process share, in one place.

A script builds its sessions deep inside Estimator, Keras or its own code, so they can only
reach what ``tf2npu run`` (or ``npu_bridge``'s install) asked for through process-wide state.
That state is this one object: the settings, whether sessions are NPU sessions by default,
the run counters, the graph and model numbers, and the process-wide :class:`RunInstrument`s.
The session hook reads it once per session and passes it on explicitly (``NpuSession`` ->
``GraphMirror`` -> ``compile_graph``); nothing below the hook looks it up again.

Instruments that depend on a session's own options (a tensor dump set in its ``parameter_map``)
are made per session by the factories in :data:`SESSION_INSTRUMENTS`.
"""

from __future__ import annotations

import errno
import itertools
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from tf2npu.config.sources import from_cli
from tf2npu.errors import UsageError
from tf2npu.runtime.instruments import RunInstrument, SessionInfo
from tf2npu.runtime.settings import EXECUTION_MODES, RuntimeSettings
from tf2npu.runtime.stats import RunStats

if TYPE_CHECKING:
    from tf2npu.config.options import NpuOptions
    from tf2npu.config.overrides import EngineOverrides
    from tf2npu.runtime.dump import DumpWriter

__all__ = [
    "SESSION_INSTRUMENTS",
    "RuntimeContext",
    "configure",
    "context",
    "current",
    "reset_settings",
    "reset_stats",
    "run_stats",
    "session_instruments",
    "use_context",
    "use_settings",
]


@dataclass
class RuntimeContext:
    """The sessions' shared state (see the module docstring)."""

    settings: RuntimeSettings = field(default_factory=RuntimeSettings)
    stats: RunStats = field(default_factory=RunStats)
    npu_by_default: bool = False
    """``npu_init``'s side effect: sessions without ``NpuOptimizer`` become NPU sessions."""
    extra_instruments: list[RunInstrument] = field(default_factory=list)
    """Process-wide instruments a tool added (a golden dump for ``--no-npu --dump``)."""
    dump_writers: dict[Path, DumpWriter] = field(default_factory=dict)
    """One background writer per dump folder, shared by the sessions (one ``time`` folder)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _graph_numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _session_keys: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _runs: dict[tuple[Any, ...], int] = field(default_factory=dict, repr=False)
    _run_steps: dict[int, int] = field(default_factory=dict, repr=False)
    _builtin: list[RunInstrument] = field(default_factory=list, repr=False)
    _open: dict[int, tuple[SessionInfo, weakref.ref[Any]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from tf2npu.runtime.compile import CheckResult, PrintModelDumps
        from tf2npu.runtime.determinism import Determinism
        from tf2npu.runtime.dump import GraphJsonDumps
        from tf2npu.runtime.faults import InjectedFaults
        from tf2npu.runtime.instances import FusionInstances
        from tf2npu.runtime.precision_record import PrecisionRecord
        from tf2npu.runtime.races import RaceLint
        from tf2npu.runtime.stats_recorder import StatsRecorder

        self.check_result = CheckResult(self)
        self.determinism = Determinism()
        self.fusion_instances = FusionInstances(self)
        self.injected_faults = InjectedFaults(self)
        self.races = RaceLint()
        self._builtin = [
            self.determinism,
            StatsRecorder(self),
            self.check_result,
            PrintModelDumps(self),
            GraphJsonDumps(),
            self.fusion_instances,
            self.injected_faults,
            PrecisionRecord(self),
            self.races,
        ]

    @property
    def instruments(self) -> list[RunInstrument]:
        """The process-wide instruments, built-in first."""
        return [*self._builtin, *self.extra_instruments]

    def next_graph_num(self) -> int:
        """The next graph number (the adapter numbers the graphs it partitions)."""
        with self.lock:
            return next(self._graph_numbers)

    def next_session_key(self) -> int:
        with self.lock:
            return next(self._session_keys)

    def opened(self, info: SessionInfo, session: Any) -> None:
        """``session`` (described by ``info``) was created; it is open until :meth:`closed`."""
        with self.lock:
            self._open[info.key] = (info, weakref.ref(session))

    def closed(self, info: SessionInfo) -> None:
        with self.lock:
            self._open.pop(info.key, None)

    def open_sessions(self) -> list[SessionInfo]:
        """The sessions not closed yet and still alive, oldest first."""
        with self.lock:
            entries = sorted(self._open.items())
        return [info for _, (info, ref) in entries if ref() is not None]

    def run_number(self, key: tuple[Any, ...]) -> int:
        """The number of the run signature ``key`` (:meth:`RunSignature.key`), given in the
        order signatures are first planned; a signature planned again keeps its number."""
        with self.lock:
            return self._runs.setdefault(key, len(self._runs) + 1)

    def next_step(self, run: int) -> int:
        """How many times signature ``run`` ran before (its dump step), counting this one."""
        with self.lock:
            step = self._run_steps.get(run, 0)
            self._run_steps[run] = step + 1
            return step

    def close(self) -> list[str]:
        """Flush every instrument (``tf2npu run`` at exit), each one even when another could
        not write (a full disk); what could not be written, one message each."""
        problems = []
        for instrument in self.instruments:
            try:
                instrument.close()
            except OSError as exc:
                problems.append(_write_problem(exc))
        for writer in list(self.dump_writers.values()):
            try:
                writer.flush()
            except OSError as exc:
                problems.append(_write_problem(exc))
        return problems


def _write_problem(exc: OSError) -> str:
    """``exc`` as one line naming the file and the fix."""
    where = (
        f"cannot write {exc.filename!r}: {exc.strerror}"
        if exc.filename
        else str(exc).removeprefix("tf2npu: ")
    )
    if exc.errno == errno.ENOSPC or "No space left" in where:
        where += "; free space on that disk (or give a folder on another), then run again"
    return where


SessionInstrumentFactory = Callable[["NpuOptions", RuntimeContext], RunInstrument | None]
"""Makes a session's own instrument from its options, or None when they do not ask for it."""


def _dump_instrument(options: NpuOptions, ctx: RuntimeContext) -> RunInstrument | None:
    from tf2npu.runtime.dump import session_dump

    return session_dump(options, ctx)


def _profile_instrument(options: NpuOptions, ctx: RuntimeContext) -> RunInstrument | None:
    from tf2npu.runtime.profile import session_profile

    return session_profile(options, ctx)


SESSION_INSTRUMENTS: list[SessionInstrumentFactory] = [_dump_instrument, _profile_instrument]


def session_instruments(options: NpuOptions, ctx: RuntimeContext) -> list[RunInstrument]:
    """The instruments of one NPU session: the process-wide ones, then its own."""
    own = [i for i in (factory(options, ctx) for factory in SESSION_INSTRUMENTS) if i]
    return [*ctx.instruments, *own]


_context: RuntimeContext | None = None
_context_lock = threading.Lock()


def context() -> RuntimeContext:
    """The context in force (made on first use)."""
    global _context
    if _context is None:
        with _context_lock:
            if _context is None:
                _context = RuntimeContext()
    return _context


def use_context(ctx: RuntimeContext) -> RuntimeContext:
    """Put ``ctx`` in force; returns the one it replaces (tests restore it)."""
    global _context
    with _context_lock:
        previous = context() if _context is not None else RuntimeContext()
        _context = ctx
    return previous


# -- the settings and counters of the context in force -------------------------------


def current() -> RuntimeSettings:
    """The settings in force."""
    return context().settings


def configure(
    *,
    npu: bool | None = None,
    options: Iterable[str] | None = None,
    execution: str | None = None,
    report_dir: str | Path | None = None,
    strict_options: bool | None = None,
    engine: EngineOverrides | None = None,
) -> RuntimeSettings:
    """Change the settings in force (only the arguments given); returns the new settings.

    Args:
        npu: False runs every session stock (``--no-npu``).
        options: ``KEY=VALUE`` strings as ``--option`` takes them (replace earlier overrides).
        execution: ``host`` or ``xla``.
        report_dir: directory for run artifacts.
        strict_options: True makes unknown ``parameter_map`` keys an error.
        engine: a trial's engine overrides (:mod:`tf2npu.config.overrides`).

    Raises:
        UsageError: an unknown execution mode.
        tf2npu.errors.ConfigError: a bad ``KEY=VALUE`` (unknown option, wrong type).
    """
    changes: dict[str, object] = {}
    if npu is not None:
        changes["npu"] = npu
    if options is not None:
        changes["overrides"] = MappingProxyType(dict(from_cli(options)))
    if execution is not None:
        if execution not in EXECUTION_MODES:
            raise UsageError(
                f"--execution {execution!r} is not a mode; use one of: {', '.join(EXECUTION_MODES)}"
            )
        changes["execution"] = execution
    if report_dir is not None:
        changes["report_dir"] = Path(report_dir)
    if strict_options is not None:
        changes["strict_options"] = strict_options
    if engine is not None:
        changes["engine"] = engine
    ctx = context()
    ctx.settings = replace(ctx.settings, **changes)  # type: ignore[arg-type]
    return ctx.settings


def reset_settings() -> None:
    """Back to the default settings (tests)."""
    use_settings(RuntimeSettings())


def use_settings(settings: RuntimeSettings) -> None:
    """Put ``settings`` in force as they are (tests restore what they found)."""
    context().settings = settings


def run_stats() -> RunStats:
    """The counters of the context in force."""
    return context().stats


def reset_stats() -> RunStats:
    """Start counting afresh (tests, or a runner that runs several scripts); returns the new one."""
    ctx = context()
    ctx.stats = RunStats()
    return ctx.stats
