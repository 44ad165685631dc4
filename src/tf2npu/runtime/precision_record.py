"""The per-op precision of every run: ``precision`` in ``run_summary.json``.

Each compile adds one :class:`~tf2npu.artifacts.run_summary.PrecisionRow` per user op the
precision pass judged (its :class:`~tf2npu.graph.decisions.PrecisionDecision`) to the run's
:class:`~tf2npu.runtime.stats.RunStats`: the dtype it runs in and the reason code. Only the
user's nodes are listed, not those a pass made (``.../_tf2npu_...``: casts, clones). ``op_type``
is the GE name a ``modify_mixlist`` uses (:mod:`tf2npu.graph.opinfo`); ``where``, the line of the
user's script that created the op, is looked up for the lowered ops alone (what
``tf2npu bisect precision`` names), which keeps the record cheap on a large graph.
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

    def on_compile(self, event: CompileEvent) -> None:
        rows = precision_rows(event)
        if rows:
            self._ctx.stats.record_precision(rows)


def precision_rows(event: CompileEvent) -> list[PrecisionRow]:
    """The rows of one compile, in the graph's node order."""
    from tf2npu.graph.decisions import PRECISION, PrecisionDecision
    from tf2npu.graph.ir import RESERVED_SUFFIX
    from tf2npu.graph.opinfo import load_default

    library = load_default()
    stubs = event.stubs or frozenset()
    rows = []
    for node in event.graph:
        decision = node.meta.get(PRECISION)
        if not isinstance(decision, PrecisionDecision) or node.name in stubs:
            continue
        if RESERVED_SUFFIX in node.name:  # made by a pass (a clone, a cast): not the user's op
            continue
        code, _, detail = decision.reason.partition(": ")
        row = PrecisionRow(
            op=node.name,
            op_type=library.get(node.op).ge_op or node.op,
            tf_type=node.op,
            dtype=decision.after,
            reason=code,
            detail=detail,
            graph=event.graph_num,
        )
        if row.lowered:
            row = PrecisionRow(**{**row.to_json(), "where": _where(event, node.name)})
        rows.append(row)
    return rows


def _where(event: CompileEvent, name: str) -> str:
    from tf2npu.runtime.errors import created_at

    if event.session is None:
        return ""
    try:
        op = event.session.graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return ""
    return created_at(op)
