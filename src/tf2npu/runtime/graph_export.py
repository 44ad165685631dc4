"""``tf2npu run --export-graph DIR``: the graph of each NPU session, for ``tf2npu graph inspect``.

Each compile of an NPU session writes the session's whole client graph (what
``tf.compat.v1.train.export_meta_graph`` would hold: the user's ``tf.Graph``, not the engine's
output) as a binary GraphDef, ``DIR/session_<key>.pb``; a session whose graph grows and is
compiled again (Keras, ops built inside the training loop) rewrites its file, so it holds the
graph as last compiled. At exit one line on stderr names the files and the command that reads
them. Stock sessions (``--no-npu``, no ``NpuOptimizer``) are never compiled and not written.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from tf2npu.atomic import write_bytes_atomic
from tf2npu.runtime.instruments import CompileEvent, RunInstrument

__all__ = ["GraphExport", "file_name"]


def file_name(session_key: int) -> str:
    """The file of session ``session_key`` in the export folder."""
    return f"session_{session_key}.pb"


class GraphExport(RunInstrument):
    """Writes each NPU session's client graph into :attr:`directory` (module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.written: dict[int, Path] = {}
        self._lock = threading.Lock()

    def on_compile(self, event: CompileEvent) -> None:
        if event.session is None:
            return
        # With the shapes TF inferred (``_output_shapes``): graph inspect then knows the size
        # and shape of each tensor crossing between host and GeOps.
        data = event.session.graph.as_graph_def(add_shapes=True).SerializeToString()
        path = self.directory / file_name(event.session.key)
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(path, data)
            self.written[event.session.key] = path

    def close(self) -> None:
        with self._lock:
            paths = [self.written[key] for key in sorted(self.written)]
        if not paths:
            print(
                f"tf2npu run: --export-graph {self.directory}: no NPU session compiled a graph, "
                "nothing written (is the script's session configured with NpuOptimizer, and "
                "without --no-npu?)",
                file=sys.stderr,
            )
            return
        names = ", ".join(str(p) for p in paths)
        print(
            f"tf2npu run: exported {len(paths)} session graph{'s' * (len(paths) != 1)}: {names} "
            f"(tf2npu graph inspect {paths[0]})",
            file=sys.stderr,
        )
