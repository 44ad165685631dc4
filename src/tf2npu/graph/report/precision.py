"""The per-user-op precision of one engine run: the rows ``run_summary.json`` lists and the
``graph inspect`` page shows (:class:`~tf2npu.artifacts.run_summary.PrecisionRow`).

One row per node the user made (not ``.../_tf2npu_...`` clones and casts a pass made) that the
precision pass judged, from its :class:`~tf2npu.graph.decisions.PrecisionDecision`: the reason
code and sentence split apart, the GE type from the op library. ``where`` is left empty: only
the runtime knows the script lines (:mod:`tf2npu.runtime.precision_record`).
"""

from __future__ import annotations

from collections.abc import Collection

from tf2npu.artifacts.run_summary import PrecisionRow
from tf2npu.graph.decisions import PRECISION, PrecisionDecision
from tf2npu.graph.ir import RESERVED_SUFFIX, Graph
from tf2npu.graph.opinfo import load_default

__all__ = ["user_precision"]


def user_precision(
    graph: Graph, graph_num: int = 0, skip: Collection[str] = ()
) -> list[PrecisionRow]:
    """The rows of ``graph``'s top-level user nodes, in node order (``skip``: names left out,
    the stand-ins of a small change compiled on its own)."""
    library = load_default()
    rows = []
    for node in graph:
        decision = node.meta.get(PRECISION)
        if not isinstance(decision, PrecisionDecision) or node.name in skip:
            continue
        if RESERVED_SUFFIX in node.name:  # made by a pass (a clone, a cast): not the user's op
            continue
        code, _, detail = decision.reason.partition(": ")
        rows.append(
            PrecisionRow(
                op=node.name,
                op_type=library.get(node.op).ge_op or node.op,
                tf_type=node.op,
                dtype=decision.after,
                reason=code,
                detail=detail,
                graph=graph_num,
            )
        )
    return rows
