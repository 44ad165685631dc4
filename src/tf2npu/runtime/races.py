"""Variable races, named when a run is planned: the graph lint's ``races`` per run signature.

A run that reads a variable and assigns it with nothing ordering the two (BERT's
``optimization.py``: the learning rate reads ``global_step`` in the ``session.run`` that assigns
``global_step + 1``) computes a value that depends on the op schedule, so the migrated run and
the original can differ without any bug in either. :class:`RaceLint` checks each run signature
of every session (NPU or stock) once, warns once per variable, naming the variable, the read,
the write, their source lines and the fix, and keeps the races for the run summary's
``races`` (which ``verify`` and ``doctor`` read).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from tf2npu.graph.lint import RACE_CHECK, RACE_FIX, Race, races
from tf2npu.runtime.errors import created_at
from tf2npu.runtime.instruments import RunHook, RunInstrument, RunSignature

__all__ = ["RaceLint", "race_record"]

_LOG = logging.getLogger("tf2npu.runtime")
GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"
"""TF's collection of the global-step read Estimator hooks fetch with every step
(``training_util._get_or_create_global_step_read``): TF builds it to race with the increment
(the hooks take it as "this step or the next", and ``StopAtStepHook`` reads again to be sure),
so it is no race to report."""


def race_record(race: Race, where: dict[str, str]) -> dict[str, str]:
    """One race as the run summary holds it (``where``: node -> ``file:line in function``)."""
    return {
        "variable": race.variable,
        "read": race.read,
        "read_op": race.read_op,
        "read_at": where.get(race.read, ""),
        "write": race.write,
        "write_op": race.write_op,
        "write_at": where.get(race.write, ""),
        "message": race.message(lambda name: where.get(name, "")),
        "fix": RACE_FIX,
    }


@dataclass
class RaceLint(RunInstrument):
    """Finds the races of each run signature (see the module docstring)."""

    found: list[dict[str, str]] = field(default_factory=list)
    """The races, one per variable and client graph, in the order they were found."""
    _seen: set[tuple[int, str]] = field(default_factory=set, repr=False)
    _graphs: dict[int, tuple[int, Any]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def plan(self, run: RunSignature) -> RunHook | None:
        client = run.session.graph
        roots = [op.name for op in run.targets] + [t.op.name for t in run.fetches]
        benign = _benign_reads(client)
        with self._lock:
            for race in races(self._ir(client), roots, run.feeds, benign):
                self._report(client, race)
        return None

    def _ir(self, client: Any) -> Any:
        """The client graph as IR, converted once per graph version."""
        from tf2npu.graph.ir import Graph

        version = client.version
        cached = self._graphs.get(id(client))
        if cached is None or cached[0] != version:
            cached = (version, Graph.from_graph_def(client.as_graph_def()))
            self._graphs[id(client)] = cached
        return cached[1]

    def _report(self, client: Any, race: Race) -> None:
        key = (id(client), race.variable)
        if key in self._seen:
            return
        self._seen.add(key)
        where = {name: _created_at(client, name) for name in (race.read, race.write)}
        record = race_record(race, where)
        self.found.append(record)
        _LOG.warning("tf2npu: warning: [%s] %s; fix: %s", RACE_CHECK, record["message"], RACE_FIX)

    def summary_part(self) -> dict[str, Any]:
        return {"races": self.summary()}

    def summary(self) -> list[dict[str, str]]:
        """The run summary's ``races``."""
        return list(self.found)


def _benign_reads(client: Any) -> set[str]:
    """The ops that compute the global-step read of :data:`GLOBAL_STEP_READ_KEY` (a ``cond``
    on whether the variable is initialised, its read, ``+ 0``), up to the variable."""
    names: set[str] = set()
    stack = [t.op for t in client.get_collection(GLOBAL_STEP_READ_KEY)]
    while stack:
        op = stack.pop()
        if op.name in names or op.type in ("VarHandleOp", "VariableV2", "Variable"):
            continue
        names.add(op.name)
        stack.extend(t.op for t in op.inputs)
    return names


def _created_at(client: Any, name: str) -> str:
    try:
        return created_at(client.get_operation_by_name(name))
    except (KeyError, ValueError):
        return ""
