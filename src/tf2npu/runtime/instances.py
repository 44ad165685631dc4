"""``fusion_instances.json``: every fusion instance the run's compiles applied, and where the
script created its root.

The fusion pass records each instance it applies (:class:`~tf2npu.graph.decisions.
FusionInstance`); this run instrument collects them from every compile of the process into
``REPORT_DIR/fusion_instances.json``::

    [{"graph": 1, "rule": "matmul_biasadd", "root": "dense/BiasAdd",
      "nodes": ["dense/BiasAdd", "dense/MatMul"], "where": "train.py:42"}]

``where`` is the line of the user's code that created the root op (the innermost frame of its
creation stack outside TensorFlow, Keras and tf2npu), or null when unknown (a graph imported
from a file, a node inside a function body). ``tf2npu bisect`` reads the file for its
candidates. It is written whatever the flags (at the first compile, ``[]`` when nothing fused,
then at each compile that fused something): it costs one small JSON write per such compile, and
a bisection needs it from runs that did not ask for records.

It also keeps which entries of a trial's ``TF2NPU_FUSION_INSTANCES`` file matched an instance:
an entry no compile matched is listed in the run summary (``fusion_instances_unmatched``), not
raised, since a trial's graph may differ from the run that listed the instances.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from tf2npu.atomic import write_text_atomic
from tf2npu.graph.decisions import FUSION_INSTANCES, FUSIONS_OFF, FusionInstance
from tf2npu.runtime.compile import report_dir
from tf2npu.runtime.errors import is_library_file, library_roots
from tf2npu.runtime.instruments import CompileEvent, RunInstrument

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext

__all__ = ["FUSION_INSTANCES_FILE", "FusionInstances", "creation_line"]

FUSION_INSTANCES_FILE = "fusion_instances.json"


class FusionInstances(RunInstrument):
    """Collects the fusion instances of every compile (see the module docstring)."""

    def __init__(self, ctx: RuntimeContext) -> None:
        self._ctx = ctx
        self._records: list[dict[str, Any]] = []
        self._switched_off: set[tuple[str, str]] = set()
        self._written = False
        self._lock = threading.Lock()

    def on_compile(self, event: CompileEvent) -> None:
        applied: list[FusionInstance] = event.graph.meta.get(FUSION_INSTANCES, [])
        off: list[FusionInstance] = event.graph.meta.get(FUSIONS_OFF, [])
        client = event.session.graph if event.session is not None else None
        roots = library_roots() if applied and client is not None else ()
        records = [
            {
                "graph": event.graph_num,
                **instance.to_json(),
                "where": _where(client, instance.root, roots),
            }
            for instance in applied
        ]
        with self._lock:
            self._switched_off.update((i.rule, i.root) for i in off)
            if not records and self._written:
                return
            self._written = True
            self._records.extend(records)
            text = json.dumps(self._records, indent=1) + "\n"
            path = report_dir(self._ctx.settings) / FUSION_INSTANCES_FILE
            write_text_atomic(path, text)

    @property
    def records(self) -> list[dict[str, Any]]:
        """What ``fusion_instances.json`` holds so far."""
        with self._lock:
            return list(self._records)

    def summary_part(self) -> dict[str, Any]:
        return {"fusion_instances_unmatched": self.unmatched()}

    def unmatched(self) -> list[dict[str, str]]:
        """Entries of the trial's instance file that switched nothing off in any compile."""
        override = self._ctx.settings.engine.fusion
        with self._lock:
            matched = set(self._switched_off)
        matched_rules = {rule for rule, _ in matched}
        out = [{"rule": r} for r in sorted(override.rules_off) if r not in matched_rules]
        out += [
            {"rule": r, "root": root}
            for r, root in sorted(override.instances_off)
            if (r, root) not in matched
        ]
        return out

    def reset(self) -> None:
        with self._lock:
            self._records.clear()
            self._switched_off.clear()
            self._written = False


def _where(client: Any, root: str, roots: tuple[str, ...]) -> str | None:
    if client is None or ":" in root:  # "<function>:<node>": no op of the client graph
        return None
    try:
        op = client.get_operation_by_name(root)
    except (KeyError, ValueError):
        return None
    return creation_line(op, roots)


def creation_line(op: Any, roots: tuple[str, ...] | None = None) -> str | None:
    """``file:line`` of the user's code that created ``op``, or None when unknown.

    The innermost frame of the op's creation stack that is not library code
    (:func:`tf2npu.runtime.errors.is_library_file`).
    """
    try:
        frames = list(op.traceback)
    except Exception:  # an op imported from a GraphDef has no creation stack
        return None
    roots = roots or library_roots()
    for frame in reversed(frames):
        if not is_library_file(str(frame.filename), roots):
            return f"{frame.filename}:{frame.lineno}"
    return None
