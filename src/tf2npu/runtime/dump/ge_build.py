"""``DUMP_GE_GRAPH``: each GE graph's build graph in ``DUMP_GRAPH_PATH``, as GE and atc leave it.

On the device each run signature is a GE graph of its own, and GE writes its build graph as
``ge_proto_<graph id>_Build.txt``; seed 001 converts it with ``atc --mode=5`` and precision_tool
reads ``ge_proto_<id>_Build.txt.json`` beside it (:func:`tf2npu.artifacts.gegraph.dump_build`).
Here the graph id is the run signature's number, the ``model_id`` of its dumps, and the graph
holds one model per GeOp the signature runs, named as its dump folder (``GeOp1_0_2``): so
precision_tool's ``vc`` finds each model's dump by the model's name, and ``ni`` the ops of it.
A signature planned again (its graph grew) writes its files again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts import gegraph
from tf2npu.runtime.dump.select import executed_ops, subgraph, with_producers
from tf2npu.runtime.instruments import RunHook, RunInstrument, RunSignature, SyncEvent

__all__ = ["GraphJsonDumps"]


class GraphJsonDumps(RunInstrument):
    """Writes the build graph of every run signature of a session with ``DUMP_GE_GRAPH`` set."""

    def __init__(self) -> None:
        self._graphs: dict[tuple[int, str], gegraph.GeGraph] = {}
        self._clusters: dict[str, tuple[int, str]] = {}
        """mirror node name -> (graph number of its compile, its GeOp's name)."""
        self._written: dict[int, tuple[Any, ...]] = {}
        """signature number -> what its files hold (rewritten only when that changes)."""

    def on_sync(self, event: SyncEvent) -> None:
        if _directory(event.session) is None:
            return
        for graph in event.ge_graphs:
            self._graphs[(event.graph_num, graph.name)] = graph
            for op in graph.ops:
                self._clusters[op.name] = (event.graph_num, graph.name)

    def plan(self, run: RunSignature) -> RunHook | None:
        directory = _directory(run.session)
        if directory is None:
            return None
        names = {op.name for op in executed_ops(run.executed_roots(), run.executed_feeds())}
        models = []
        for key in sorted({self._clusters[n] for n in names if n in self._clusters}):
            graph = self._graphs[key]
            kept = with_producers(graph, [op for op in graph.ops if op.name in names])
            model = subgraph(graph, kept)
            models.append(gegraph.GeGraph(dumpfile.model_name(graph.name, run.number), model.ops))
        content = tuple(models)
        if models and self._written.get(run.number) != content:
            directory.mkdir(parents=True, exist_ok=True)
            gegraph.dump_build(models, directory, run.number)
            self._written[run.number] = content
        return None


def _directory(session: Any) -> Path | None:
    options = session.options
    if options is None or not options.env.dump_ge_graph:
        return None
    return Path(options.env.dump_graph_path or ".")
