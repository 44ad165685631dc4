"""``injected_faults`` in the run summary: what each fault spec of a drill corrupted.

The engine's ``inject_faults`` pass records, per compile, the nodes each spec hit
(:class:`~tf2npu.graph.passes.inject_faults.InjectedFault`). This run instrument gathers them
over every compile of the process, so the summary can list each spec with the nodes it hit in
any graph, and name a spec that hit nothing anywhere (a typo in a node name is then loud, not a
drill that silently tested nothing). Stock sessions never pass through the engine: a fault
never touches them.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from tf2npu.runtime.instruments import CompileEvent, RunInstrument

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext

__all__ = ["InjectedFaults"]


class InjectedFaults(RunInstrument):
    """Collects what the fault specs hit (see the module docstring)."""

    def __init__(self, ctx: RuntimeContext) -> None:
        self._ctx = ctx
        self._hit: dict[str, dict[str, None]] = {}
        self._lock = threading.Lock()

    def on_compile(self, event: CompileEvent) -> None:
        from tf2npu.graph.passes.inject_faults import INJECTED_FAULTS

        with self._lock:
            for fault in event.graph.meta.get(INJECTED_FAULTS, ()):
                nodes = self._hit.setdefault(fault.spec, {})
                nodes.update(dict.fromkeys(fault.applied_to))

    def summary_part(self) -> dict[str, Any]:
        return {"injected_faults": self.summary()}

    def summary(self) -> list[dict[str, Any]]:
        """``[{spec, applied_to}]`` for every spec in force, in the order given; a spec that
        hit nothing has ``applied_to`` ``[]``."""
        specs = self._ctx.settings.engine.faults
        with self._lock:
            return [
                {"spec": spec.text, "applied_to": list(self._hit.get(spec.text, {}))}
                for spec in specs
            ]

    def reset(self) -> None:
        with self._lock:
            self._hit.clear()
