"""The per-op precision of every run: ``precision`` in ``run_summary.json``.

Each compile adds one :class:`~tf2npu.artifacts.run_summary.PrecisionRow` per user op the
precision pass judged (its :class:`~tf2npu.graph.decisions.PrecisionDecision`) to the run's
:class:`~tf2npu.runtime.stats.RunStats`: the dtype it runs in and the reason code. Only the
user's nodes are listed, not those a pass made (``.../_tf2npu_...``: casts, clones). ``op_type``
is the GE name a ``modify_mixlist`` uses (:mod:`tf2npu.graph.opinfo`); ``where``, the line of the
user's script that created the op, is looked up for the lowered ops of a recorded run alone
(``run --record`` or ``TF2NPU_RECORD=1``, and ``tf2npu bisect`` trials, whose ``bisect
precision`` names the lines): on a 12-layer BERT graph (8316 nodes, 2839 lowered) the rows took
94 ms, with the lines 509 ms, next to 4.4 s for the engine on a loaded machine
(``benchmarks/precision_record_overhead.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tf2npu.artifacts.run_summary import PrecisionRow
from tf2npu.runtime.instruments import CompileEvent, RunInstrument

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext

__all__ = ["PrecisionRecord", "precision_rows"]


class PrecisionRecord(RunInstrument):
    """Adds each compile's precision rows to the run statistics (see the module docstring)."""

    def __init__(self, ctx: RuntimeContext) -> None:
        self._ctx = ctx

    def _recorded(self) -> bool:
        """Whether this run records (``run --record``: a run recorder is installed)."""
        from tf2npu.runtime.record import RunRecorder

        return any(isinstance(i, RunRecorder) for i in self._ctx.extra_instruments)

    def on_compile(self, event: CompileEvent) -> None:
        rows = precision_rows(event, lines=self._recorded())
        if rows:
            self._ctx.stats.record_precision(rows)


def precision_rows(event: CompileEvent, *, lines: bool) -> list[PrecisionRow]:
    """The rows of one compile, in the graph's node order; ``lines``: look up ``where`` of the
    lowered ops (a recorded run)."""
    from dataclasses import replace

    from tf2npu.graph.report.precision import user_precision

    rows = user_precision(event.graph, event.graph_num, event.stubs or ())
    if not lines:
        return rows
    where = _Where(event)
    return [replace(row, where=where(row.op)) if row.lowered else row for row in rows]


class _Where:
    """``file:line in function`` of the user's code that created an op, as
    :func:`tf2npu.runtime.errors.created_at` finds it, with each file judged (library code or
    the user's) once per compile: resolving every frame's path made the record of a 12-layer
    BERT graph take longer than its compile."""

    def __init__(self, event: CompileEvent) -> None:
        from tf2npu.runtime.errors import library_roots

        self._graph = event.session.graph if event.session is not None else None
        self._roots = library_roots()
        self._library: dict[str, bool] = {}

    def __call__(self, name: str) -> str:
        from tf2npu.runtime.errors import is_library_file

        if self._graph is None:
            return ""
        try:
            frames = list(self._graph.get_operation_by_name(name).traceback)
        except Exception:  # no such op, or one imported from a GraphDef: no creation stack
            return ""
        for frame in reversed(frames):
            filename = str(frame.filename)
            library = self._library.get(filename)
            if library is None:
                library = self._library[filename] = is_library_file(filename, self._roots)
            if not library:
                return f"{filename}:{frame.lineno} in {frame.name}"
        return ""
