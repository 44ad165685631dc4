"""One client graph through the graph engine, as a session sees it: decide, check, lower.

:func:`compile_graph` is what a sync runs: the engine over the exported client graph, the
run-time errors the real adapter raises when its graph cannot run, and, with ``--execution
xla``, the XLA marks on the GeOps. It returns the decided IR (for fetch aliases) and the
``GraphDef`` to import. The adapter's artifacts are written by two run instruments defined
here: :class:`CheckResult` (``check_result.tf.json``) and :class:`PrintModelDumps`
(``PRINT_MODEL=1``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tf2npu.atomic import write_text_atomic
from tf2npu.config.options import NpuOptions
from tf2npu.errors import GraphError
from tf2npu.graph.decisions import Diagnostic
from tf2npu.graph.ir import Graph
from tf2npu.graph.report.summary import GraphSummary
from tf2npu.runtime.instruments import CompileEvent, RunInstrument, SessionInfo
from tf2npu.runtime.settings import RuntimeSettings

if TYPE_CHECKING:
    from tf2npu.graph.passes.infra import PassInstrument
    from tf2npu.runtime.context import RuntimeContext

__all__ = [
    "CHECK_RESULT",
    "CheckResult",
    "Compiled",
    "PrintModelDumps",
    "cannot_run",
    "compile_graph",
    "report_dir",
]

CHECK_RESULT = "check_result.tf.json"
_LOG = logging.getLogger("tf2npu.runtime")


@dataclass(frozen=True)
class Compiled:
    """The engine's output for one client graph."""

    graph: Graph
    graph_def: Any
    summary: GraphSummary


def report_dir(settings: RuntimeSettings) -> Path:
    """Where run artifacts go: ``--report-dir``, else the working directory (as the adapter)."""
    return settings.report_dir if settings.report_dir is not None else Path.cwd()


def compile_graph(
    graph_def: Any,
    options: NpuOptions,
    settings: RuntimeSettings,
    *,
    graph_num: int,
    stubs: frozenset[str] | None = None,
    instruments: Sequence[RunInstrument] = (),
    session: SessionInfo | None = None,
) -> Compiled:
    """Run the engine over ``graph_def`` and return what the mirror imports.

    ``stubs`` are the stand-ins of a small change (:mod:`tf2npu.runtime.delta`), None for a
    whole graph. ``instruments`` add pass instruments and see the result (before an error is
    raised, so ``check_result.tf.json`` lists the ops of a graph that cannot run).

    Raises:
        GraphError: the engine found an error the real adapter fails on (named, with the fix).
    """
    from tf2npu.graph.engine import run_engine
    from tf2npu.graph.partition import GRAPH_NUM
    from tf2npu.graph.report import summarize

    graph = Graph.from_graph_def(graph_def)
    graph.meta[GRAPH_NUM] = graph_num
    passes = [p for i in instruments for p in i.pass_instruments(options)]
    half_round = _half_round(options, settings)
    run = run_engine(
        graph, options, instruments=passes, overrides=settings.engine, half_round=half_round
    )
    summary = summarize(run, f"graph {graph_num}")
    event = CompileEvent(session, graph_num, run.graph, summary, stubs)
    for instrument in instruments:
        instrument.on_compile(event)
    if summary.errors:
        raise GraphError(cannot_run(graph_num, summary.errors))
    _log_findings(graph_num, summary)
    out = run.graph.to_graph_def()
    out.versions.CopyFrom(graph_def.versions)
    if settings.execution == "xla":
        from tf2npu.runtime.xla import mark_clusters

        mark_clusters(out)
    return Compiled(run.graph, out, summary)


def _half_round(options: NpuOptions, settings: RuntimeSettings) -> bool:
    """Whether lowering may emit the native float16 rounding (loaded here, before the lowered
    graph is imported: the GraphDef may name its op).

    Not in a session that dumps (``enable_dump``, ``enable_dump_debug``): a dump takes the
    tensors of the ops a run executes, and with the op a float16 ``Cast`` whose float32 value
    is all its readers need is not executed, so its tensor would be missing from the dump and
    an overflow would be found at its first float32 reader. Such a session keeps the ``Cast``
    pairs (the same values, the graph the dump describes). Nor under ``--execution xla``: the
    op has no XLA kernel, so it would split the clusters, and XLA fuses a ``Cast`` pair itself.
    """
    if options.enable_dump or options.enable_dump_debug or settings.execution == "xla":
        return False
    from tf2npu.runtime.native import half_round_available

    return half_round_available()


def cannot_run(graph_num: int, errors: Sequence[Diagnostic]) -> str:
    """The message of the run-time error: one sentence, then one item per engine error (an
    error's own list indented under it), never one line of every error joined."""
    if len(errors) == 1:
        return f"graph {graph_num} cannot run on the device: {errors[0].render()}"
    items = "".join("\n- " + d.render().replace("\n", "\n  ") for d in errors)
    return f"graph {graph_num} cannot run on the device ({len(errors)} errors):{items}"


def _log_findings(graph_num: int, summary: GraphSummary) -> None:
    """Warnings of the engine, logged once per compile (``tf2npu run`` also counts them).

    Full offload keeps one GeOp; device-capable ops that cannot join it run on the host, as
    the adapter runs them (its ``MergeSubgraphs`` clears their cluster and TF executes them).
    That is a warning, not an error: a ``Saver``'s restore graph (``RestoreV2`` feeding
    ``Assign``) takes exactly this path on every checkpoint restore.
    """
    for finding in summary.warnings:
        level = logging.INFO if finding.code == "fallback_to_host" else logging.WARNING
        _LOG.log(level, "graph %d: %s", graph_num, finding.render())


_EDGE_REASON = "_edge"
"""Placement reasons ending so (``ref_edge``, ``resource_edge``, ``string_edge``) come from a
neighbour on the host, not from the op itself."""


def _stub_context(graph: Graph, stubs: frozenset[str]) -> frozenset[str]:
    """The stubs, and the new ops sent to the host only for reading one (transitively).

    A stub is a ``Placeholder`` standing in for an earlier node (often a variable): to the
    engine it is a host feed, so a new op reading a variable through it is demoted as "reads a
    ref tensor from host op 'v'". Neither is a finding about the user's graph. An op demoted
    for its own sake (not in the device library, gray) is kept, stub input or not.
    """
    from tf2npu.graph.decisions import PLACEMENT

    if not stubs:
        return stubs
    excluded = set(stubs)
    changed = True
    while changed:  # a demotion spreads along edges; a handful of rounds at most
        changed = False
        for node in graph:
            placement = node.meta.get(PLACEMENT)
            if (
                node.name in excluded
                or placement is None
                or not placement.reason.endswith(_EDGE_REASON)
            ):
                continue
            producers = {ref.node for ref in node.inputs} | set(node.control_inputs)
            if producers & excluded:
                excluded.add(node.name)
                changed = True
    return frozenset(excluded)


class PrintModelDumps(RunInstrument):
    """``PRINT_MODEL=1``: the adapter's ``BeforeSubGraph_*/AfterSubGraph_*`` graph dumps."""

    def __init__(self, ctx: RuntimeContext) -> None:
        self._ctx = ctx

    def pass_instruments(self, options: NpuOptions) -> list[PassInstrument[Any]]:
        from tf2npu.graph.dumps import PrintModel

        if not options.env.print_model:
            return []
        return [PrintModel(report_dir(self._ctx.settings))]


class CheckResult(RunInstrument):
    """``check_result.tf.json``: every unsupported op of every graph this process compiled.

    The adapter deletes an old copy on first use and writes the file when its last session
    ends; here it is rewritten (atomically) after each compile that adds an entry, so a run
    that crashes still leaves it.
    """

    def __init__(self, ctx: RuntimeContext) -> None:
        self._ctx = ctx
        self._ops: dict[str, dict[str, Any]] = {}
        self._started: set[Path] = set()
        self._lock = threading.Lock()

    def on_compile(self, event: CompileEvent) -> None:
        excluded = _stub_context(event.graph, event.stubs or frozenset())
        self.add(event.summary, report_dir(self._ctx.settings), excluded)

    def add(
        self, summary: GraphSummary, directory: Path, excluded: frozenset[str] = frozenset()
    ) -> None:
        """Add ``summary``'s unsupported ops, except those named in ``excluded``."""
        from tf2npu.graph.report.check_result import check_result

        path = directory / CHECK_RESULT
        with self._lock:
            if path not in self._started:
                self._started.add(path)
                path.unlink(missing_ok=True)
            data = check_result(summary)
            if data is None:
                return
            before = len(self._ops)
            for entry in data["op"]:
                if entry["name"] not in excluded:
                    self._ops.setdefault(entry["name"], entry)
            if len(self._ops) == before and (path.exists() or not self._ops):
                return
            ops = [self._ops[name] for name in sorted(self._ops)]
            write_text_atomic(path, json.dumps({"op": ops}, indent=2, sort_keys=True))

    def reset(self) -> None:
        with self._lock:
            self._ops.clear()
            self._started.clear()
