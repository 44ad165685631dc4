"""Graph dumps: text GraphDefs around passes and the adapter's ``PRINT_MODEL=1`` files.

With ``PRINT_MODEL=1`` the adapter's partition pass writes ``BeforeSubGraph_<n>.pbtxt`` (the
graph it is given) and ``AfterSubGraph_<n>.pbtxt`` (the graph it leaves, GeOps formed) into the
working directory, ``n`` being the process-wide graph number (here ``graph.meta[GRAPH_NUM]``,
default 1). :class:`PrintModel` writes the same two files around our partition pass, plus
``AfterSubGraph_<GeOp>.pbtxt``: each GeOp's sub-graph on its own (boundary inputs as
placeholders named like the vendor's ``_Arg``), which the adapter only holds as a library
function. Dumps are instruments (never code inside a pass); every file is written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tf2npu.atomic import write_text_atomic
from tf2npu.graph.decisions import CLUSTERS, Cluster
from tf2npu.graph.instruments import DumpGraph
from tf2npu.graph.ir import Graph
from tf2npu.graph.partition import GRAPH_NUM, extract_subgraph
from tf2npu.graph.passes.infra import PassInfo, PassInstrument, PassResult

__all__ = ["PARTITION_PASS", "PrintModel", "pass_dumps", "write_pbtxt"]

PARTITION_PASS = "partition"


def write_pbtxt(graph: Graph, path: Path) -> None:
    """``graph`` (with its library) as a text GraphDef at ``path``, atomically."""
    from google.protobuf import text_format

    write_text_atomic(path, text_format.MessageToString(graph.to_graph_def()))


def pass_dumps(directory: Path) -> DumpGraph[Graph]:
    """``<NN>_<pass>_<before|after>.pbtxt`` around every pass (``--dump-dir``)."""
    return DumpGraph(directory, write_pbtxt)


class PrintModel(PassInstrument[Graph]):
    """The ``PRINT_MODEL=1`` files, written around the partition pass into ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.written: list[Path] = []

    def before(self, graph: Graph, info: PassInfo) -> None:
        if info.name == PARTITION_PASS:
            self._write(graph, f"BeforeSubGraph_{_graph_num(graph)}")

    def after(self, graph: Graph, info: PassInfo, result: PassResult[Any]) -> None:
        if info.name != PARTITION_PASS:
            return
        self._write(graph, f"AfterSubGraph_{_graph_num(graph)}")
        clusters: list[Cluster] = graph.meta.get(CLUSTERS) or []
        for cluster in clusters:
            self._write(extract_subgraph(graph, cluster), f"AfterSubGraph_{cluster.name}")

    def _write(self, graph: Graph, stem: str) -> None:
        path = self.directory / f"{stem}.pbtxt"
        write_pbtxt(graph, path)
        self.written.append(path)


def _graph_num(graph: Graph) -> int:
    """The vendor's per-process graph number, as the partition pass used it in GeOp names."""
    return int(graph.meta.get(GRAPH_NUM, 1))
