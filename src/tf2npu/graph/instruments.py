"""Instruments around graph passes: timing, dumps, skipping (TVM ``ir/instrument.py``).

Passes never time, dump or skip themselves; a :class:`PassContext` carries these instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from tf2npu.errors import UnknownNameError
from tf2npu.graph.passes.infra import PassInfo, PassInstrument, PassResult

__all__ = ["DumpGraph", "SkipPasses", "TimePasses"]

G = TypeVar("G")
When = Literal["before", "after", "both"]


class TimePasses(PassInstrument[object]):
    """Wall seconds per pass that ran, in run order: ``pass_seconds`` in reports."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds: dict[str, float] = {}
        self._clock = clock
        self._started: dict[str, float] = {}

    def before(self, graph: object, info: PassInfo) -> None:
        self._started[info.name] = self._clock()

    def after(self, graph: object, info: PassInfo, result: PassResult[Any]) -> None:
        self.seconds[info.name] = self._clock() - self._started.pop(info.name)

    def on_error(self, graph: object, info: PassInfo, exc: BaseException) -> None:
        self._started.pop(info.name, None)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


class DumpGraph(PassInstrument[G]):
    """Write the graph around passes as ``<NN>_<pass>_<before|after>.pbtxt`` in ``directory``.

    ``NN`` counts the passes that ran (from 01), dumped or not, so numbers follow the run order.
    The ``writer`` (the IR's serialiser) is injected: the infra does not know the graph format.
    ``only`` limits dumps to those pass names; ``None`` dumps around every pass.
    """

    def __init__(
        self,
        directory: Path,
        writer: Callable[[G, Path], None],
        when: When = "both",
        only: Collection[str] | None = None,
    ) -> None:
        if when not in ("before", "after", "both"):
            raise ValueError(f"when must be 'before', 'after' or 'both', not {when!r}")
        self.directory = Path(directory)
        self.writer = writer
        self.when = when
        self.only = None if only is None else frozenset(only)
        self.written: list[Path] = []
        self._count = 0

    def check_names(self, known: Sequence[str]) -> None:
        for name in sorted(self.only or ()):
            if name not in known:
                raise UnknownNameError("pass", name, tuple(known))

    def before(self, graph: G, info: PassInfo) -> None:
        self._count += 1
        if self.when in ("before", "both"):
            self._dump(graph, info, "before")

    def after(self, graph: G, info: PassInfo, result: PassResult[Any]) -> None:
        if self.when in ("after", "both"):
            self._dump(graph, info, "after")

    def _dump(self, graph: G, info: PassInfo, stage: str) -> None:
        if self.only is not None and info.name not in self.only:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{self._count:02d}_{info.name}_{stage}.pbtxt"
        self.writer(graph, path)
        self.written.append(path)


class SkipPasses(PassInstrument[object]):
    """Veto the named passes through ``should_run`` (they are reported as skipped)."""

    def __init__(self, names: Collection[str]) -> None:
        self.names = frozenset(names)

    def check_names(self, known: Sequence[str]) -> None:
        for name in sorted(self.names):
            if name not in known:
                raise UnknownNameError("pass", name, tuple(known))

    def should_run(self, graph: object, info: PassInfo) -> bool:
        return info.name not in self.names
