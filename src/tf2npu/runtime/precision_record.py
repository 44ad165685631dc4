"""``precision_lowered.json``: which user nodes the precision mode computed in float16.

``tf2npu bisect precision`` needs its candidates by the user's node name *and* op type: the
graph JSON of a GeOp names fused ops (``LayerNorm``, ``_FusedMatMul``) whose members' types it
does not give. With ``TF2NPU_RECORD_PRECISION=1`` in the environment, every compile adds its
lowered nodes to ``precision_lowered.json`` in the report folder::

    [{"graph": 1, "node": "bert/l0/MatMul", "type": "MatMul", "ge_type": "MatMulV2",
      "dtype": "float16", "reason": "allow: ...", "where": "train.py:41 in layer"}]

Only the user's nodes are listed, not those a pass made (``.../_tf2npu_...``: casts, clones).
``ge_type`` is the name a ``modify_mixlist`` uses (:mod:`tf2npu.graph.opinfo`); ``where`` is
the line of the user's script that created the node, ``""`` when unknown. The file is rewritten
after each compile that adds a node, so a run that crashes still leaves it.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tf2npu.atomic import write_text_atomic
from tf2npu.config.env import RECORD_PRECISION_ENV
from tf2npu.runtime.instruments import CompileEvent, RunInstrument

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext

__all__ = ["ENV", "FILE", "PrecisionRecord"]

ENV = RECORD_PRECISION_ENV
FILE = "precision_lowered.json"


class PrecisionRecord(RunInstrument):
    """Writes :data:`FILE` when :data:`ENV` is ``1`` (see the module docstring)."""

    def __init__(self, ctx: RuntimeContext) -> None:
        self._ctx = ctx
        self._rows: dict[tuple[int, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def on_compile(self, event: CompileEvent) -> None:
        if os.environ.get(ENV) != "1":
            return
        rows = _lowered(event)
        if not rows:
            return
        from tf2npu.runtime.compile import report_dir

        with self._lock:
            before = len(self._rows)
            for row in rows:
                self._rows.setdefault((row["graph"], row["node"]), row)
            if len(self._rows) == before:
                return
            data = list(self._rows.values())
        path = Path(report_dir(self._ctx.settings)) / FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(data, indent=1) + "\n")


def _lowered(event: CompileEvent) -> list[dict[str, Any]]:
    from tf2npu.graph.ir import RESERVED_SUFFIX
    from tf2npu.graph.opinfo import load_default

    library = load_default()
    rows = []
    for name, decision in event.summary.precision.items():
        node = event.graph.get(name)
        if not decision.changed or node is None or name in (event.stubs or ()):
            continue
        if RESERVED_SUFFIX in name:  # made by a pass (a clone, a cast): not the user's node
            continue
        rows.append(
            {
                "graph": event.graph_num,
                "node": name,
                "type": node.op,
                "ge_type": library.get(node.op).ge_op or node.op,
                "dtype": decision.after,
                "reason": decision.reason,
                "where": _where(event, name),
            }
        )
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
