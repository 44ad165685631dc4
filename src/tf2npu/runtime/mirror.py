"""The mirror graph: the user's graph after the graph engine, grown append-only.

An :class:`~tf2npu.runtime.session.NpuSession` never runs the user's (client) graph. It runs
one stock session over a mirror graph that :meth:`GraphMirror.sync` keeps equal to "the engine's
decisions applied to the client graph". Each sync, when the client graph changed:

1. export the client graph and run the graph engine over all of it (placement, precision,
   fusion and partition see the whole graph, so every decision has its full context);
2. import into the mirror only the nodes and functions it does not hold yet. Edges into nodes
   imported earlier go through ``input_map`` (data) or are added after the import (control),
   so the inner session is *extended*, never rebuilt: variables, iterators, lookup tables and
   queues keep their state as the graph grows;
3. remember which tensor now carries each superseded original tensor, so a fetch or feed of a
   user's name reaches the tensor the engine put in its place.

Names are stable across syncs: original nodes keep their names, and pass-created nodes are
named from their origin. A pass-created name that comes back with a different definition (the
engine decided differently once the graph grew) is imported under a fresh name instead; the
earlier node keeps serving the readers imported with it. Decisions for nodes imported in an
earlier sync are never revisited: a rewrite that would need to change them only applies to the
new nodes (results stay correct; such a pattern is just not optimised everywhere).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tf2npu.config.options import NpuOptions
from tf2npu.graph.decisions import SUPERSEDED, Superseded, replacement_of
from tf2npu.graph.ir import ORIGIN_ATTR, Graph, TensorRef, is_reserved_name
from tf2npu.runtime.instruments import RunInstrument, SessionInfo, SyncEvent

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext

__all__ = ["GraphMirror", "SyncRecord"]

#: A change of at most 1/_DELTA_SHARE of the graph's ops goes through the engine on its own.
_DELTA_SHARE = 10


@dataclass(frozen=True)
class SyncRecord:
    """What one sync did (``GraphMirror.syncs``; benchmarks and tests read it)."""

    client_nodes: int
    imported_nodes: int
    renamed_nodes: int
    export_seconds: float
    engine_seconds: float
    import_seconds: float
    incremental: bool = False
    """Whether the engine saw only the new ops (:mod:`tf2npu.runtime.delta`)."""


@dataclass
class _Aliases:
    """Client tensor/op name -> mirror name, for the originals the engine superseded."""

    tensors: dict[str, str] = field(default_factory=dict)
    ops: dict[str, str] = field(default_factory=dict)


class GraphMirror:
    """Keeps :attr:`graph` equal to the engine's output for the client graph, incrementally."""

    def __init__(
        self,
        client: Any,
        options: NpuOptions,
        ctx: RuntimeContext,
        instruments: Sequence[RunInstrument] = (),
    ) -> None:
        import tensorflow as tf

        self.client = client
        self.options = options
        self.ctx = ctx
        self.settings = ctx.settings
        self.instruments = list(instruments)
        self.session: SessionInfo | None = None
        """The session this mirror serves, once it is made (events name it)."""
        self.graph = tf.Graph()
        self.syncs: list[SyncRecord] = []
        self.last_summary: Any = None
        self._version = -1
        self._lock = threading.RLock()
        self._imported: set[str] = set()
        self._created: dict[str, bytes] = {}  # pass-created name -> its NodeDef as imported
        self._functions: set[str] = set()
        self._aliases = _Aliases()
        self._client_ops = 0
        self._client_functions: set[str] = set()
        self._tensors: dict[str, Any] = {}
        self._ops: dict[str, Any] = {}

    # -- sync ------------------------------------------------------------------------------

    def sync(self) -> None:
        """Bring the mirror up to date with the client graph (cheap when nothing changed)."""
        if self.client.version == self._version:
            return
        with self._lock:
            if self.client.version != self._version:
                self._sync()

    def _sync(self) -> None:
        from tf2npu.runtime.compile import compile_graph
        from tf2npu.runtime.delta import delta_graph_def

        version = self.client.version
        started = time.perf_counter()
        client_ops = self.client.get_operations()  # in creation order
        new_ops = client_ops[self._client_ops :]
        functions = set(self.client._functions)  # private: TF has no public listing
        delta = None
        if (
            self.syncs
            and new_ops
            and functions <= self._client_functions
            and (len(new_ops) * _DELTA_SHARE <= len(client_ops))
        ):
            delta = delta_graph_def(self.client, new_ops)
        graph_def = delta.graph_def if delta is not None else self.client.as_graph_def()
        exported = time.perf_counter()
        self._client_ops = len(client_ops)
        self._client_functions = functions
        new_nodes = any(node.name not in self._imported for node in graph_def.node)
        new_functions = any(
            f.signature.name not in self._functions for f in graph_def.library.function
        )
        if not new_nodes and not new_functions:
            self._version = version
            return
        stubs = delta.stubs if delta is not None else None
        graph_num = self.ctx.next_graph_num()
        compiled = compile_graph(
            graph_def,
            self.options,
            self.settings,
            graph_num=graph_num,
            stubs=stubs,
            instruments=self.instruments,
            session=self.session,
        )
        engined = time.perf_counter()
        out = compiled.graph_def
        renamed = self._rename_conflicts(out)
        if delta is not None:
            self._follow_aliases(out, delta.stubs)
        imports = self._delta(out)
        self._import(imports)
        aliases = _aliases(compiled.graph, renamed)
        if delta is None:
            self._aliases = aliases
        else:
            self._aliases.tensors.update(aliases.tensors)
            self._aliases.ops.update(aliases.ops)
        self._tensors.clear()
        self._ops.clear()
        imported = time.perf_counter()
        self.last_summary = compiled.summary
        if self.session is not None:
            event = SyncEvent(self.session, graph_num, compiled, renamed, stubs)
            for instrument in self.instruments:
                instrument.on_sync(event)
        self.syncs.append(
            SyncRecord(
                client_nodes=len(client_ops),
                imported_nodes=len(imports.node),
                renamed_nodes=len(renamed),
                export_seconds=exported - started,
                engine_seconds=engined - exported,
                import_seconds=imported - engined,
                incremental=delta is not None,
            )
        )
        self._version = version

    def _follow_aliases(self, out: Any, stubs: frozenset[str]) -> None:
        """Point reads of earlier superseded nodes at what replaced them in the mirror.

        A stub carries the earlier node's name; if the engine replaced that node (a float16
        clone behind a cast, a fused op), the new ops must read the replacement, as the
        earlier readers do, not re-run the superseded original.
        """
        tensors, ops = self._aliases.tensors, self._aliases.ops
        for node in out.node:
            if node.name in stubs:
                continue
            for i, text in enumerate(node.input):
                producer, index = _split(text)
                if producer not in stubs:
                    continue
                if index < 0:
                    if producer in ops:
                        node.input[i] = f"^{ops[producer]}"
                elif f"{producer}:{index}" in tensors:
                    node.input[i] = tensors[f"{producer}:{index}"]

    def _rename_conflicts(self, out: Any) -> dict[str, str]:
        """Give pass-created nodes whose name is taken by a different definition a new name."""
        renamed: dict[str, str] = {}
        taken = self._imported | {node.name for node in out.node}
        for node in out.node:
            old = self._created.get(node.name)
            if old is None or old == _node_bytes(node):
                continue
            for n in itertools.count(len(self.syncs) + 1):
                fresh = f"{node.name}_s{n}"
                if fresh not in taken:
                    break
            taken.add(fresh)
            renamed[node.name] = fresh
        if renamed:
            for node in out.node:
                if node.name in renamed:
                    node.name = renamed[node.name]
                _rename_inputs(node, renamed)
        return renamed

    def _delta(self, out: Any) -> Any:
        """The nodes and functions of ``out`` the mirror does not hold yet."""
        from tensorflow.core.framework import graph_pb2

        delta = graph_pb2.GraphDef()
        delta.versions.CopyFrom(out.versions)
        delta.node.extend(node for node in out.node if node.name not in self._imported)
        library = out.library
        delta.library.function.extend(
            f for f in library.function if f.signature.name not in self._functions
        )
        new_functions = {f.signature.name for f in delta.library.function}
        delta.library.gradient.extend(
            g for g in library.gradient if g.function_name in new_functions
        )
        return delta

    def _import(self, delta: Any) -> None:
        from tensorflow.python.framework import importer

        local = {node.name for node in delta.node}
        input_map: dict[str, Any] = {}
        late_control: list[tuple[str, str]] = []
        for node in delta.node:
            kept = []
            for text in node.input:
                producer, index = _split(text)
                if producer in local:
                    kept.append(text)
                elif index < 0:
                    late_control.append((node.name, producer))
                else:
                    key = f"{producer}:{index}"
                    input_map[key] = self.graph.get_tensor_by_name(key)
                    kept.append(text)
            del node.input[:]
            node.input.extend(kept)
        with self.graph.as_default():
            # Colocation (``_class``) may name nodes imported earlier: the importer would
            # look for them in the delta only.
            importer._import_graph_def_internal(
                delta, input_map=input_map or None, name="", validate_colocation_constraints=False
            )
        for name, producer in late_control:
            self.graph.get_operation_by_name(name)._add_control_inputs(
                [self.graph.get_operation_by_name(producer)]
            )
        for node in delta.node:
            self._imported.add(node.name)
            if is_reserved_name(node.name):
                self._created[node.name] = _node_bytes(node)
        self._functions.update(f.signature.name for f in delta.library.function)

    # -- client objects -> mirror objects ----------------------------------------------------

    def tensor(self, name: str) -> Any:
        """The mirror tensor serving the client tensor ``name`` (``node:index``)."""
        hit = self._tensors.get(name)
        if hit is None:
            hit = self.graph.get_tensor_by_name(self._aliases.tensors.get(name, name))
            self._tensors[name] = hit
        return hit

    def op(self, name: str) -> Any:
        """The mirror operation serving the client operation ``name``."""
        hit = self._ops.get(name)
        if hit is None:
            hit = self.graph.get_operation_by_name(self._aliases.ops.get(name, name))
            self._ops[name] = hit
        return hit

    def mirror_name(self, name: str) -> str:
        """The mirror name serving a client tensor (``node:i``) or op name."""
        if ":" in name:
            return self._aliases.tensors.get(name, name)
        return self._aliases.ops.get(name, name)

    def origin_of(self, mirror_name: str) -> str | None:
        """The client op a mirror node stands for (itself, or the first name of its origin)."""
        try:
            self.client.get_operation_by_name(mirror_name)
            return mirror_name
        except KeyError:
            pass
        try:
            op = self.graph.get_operation_by_name(mirror_name)
            origin = op.get_attr(ORIGIN_ATTR)
        except (KeyError, ValueError):
            return None
        names = [o.decode() if isinstance(o, bytes) else str(o) for o in origin]
        return names[0] if names else None


def _aliases(graph: Graph, renamed: Mapping[str, str]) -> _Aliases:
    """Superseded originals of the top-level graph -> the names now carrying their values."""
    aliases = _Aliases()
    for node in graph:
        sup: Superseded | None = node.meta.get(SUPERSEDED)
        if sup is None or is_reserved_name(node.name):
            continue
        first: str | None = None
        for old in sup.outputs:
            new = replacement_of(graph, old)
            target = renamed.get(new.node, new.node)
            aliases.tensors[f"{old.node}:{old.index}"] = f"{target}:{new.index}"
            first = first or target
        if first is not None:
            aliases.ops[node.name] = first
    return aliases


def _split(text: str) -> tuple[str, int]:
    """``^a`` -> (a, -1); ``a`` -> (a, 0); ``a:2`` -> (a, 2)."""
    if text.startswith("^"):
        return text[1:], -1
    ref = TensorRef.parse(text)
    return ref.node, ref.index


def _rename_inputs(node: Any, renamed: Mapping[str, str]) -> None:
    for i, text in enumerate(node.input):
        producer, index = _split(text)
        if producer in renamed:
            new = renamed[producer]
            node.input[i] = f"^{new}" if index < 0 else f"{new}:{index}"


def _node_bytes(node: Any) -> bytes:
    data: bytes = node.SerializeToString(deterministic=True)
    return data
