"""Limits ``graph inspect`` checks on a parsed ``GraphDef`` before the engine runs.

The engine's passes follow function calls recursively; a function library nested deeper than
Python's stack allows would end in a ``RecursionError`` half-way through. Measured: 300 levels
go through, 600 do not; :data:`MAX_FUNCTION_DEPTH` leaves a margin below that.
"""

from __future__ import annotations

from typing import Any

from tf2npu.errors import GraphError

MAX_FUNCTION_DEPTH = 200
"""How deeply functions may call functions (a real model nests a handful of levels)."""


def check_function_depth(graph_def: Any, source: str) -> None:
    """Raise :class:`GraphError` when the function calls nest deeper than the limit."""
    chain = deepest_call_chain(graph_def)
    if len(chain) > MAX_FUNCTION_DEPTH:
        shown = " -> ".join([*chain[:3], "...", chain[-1]])
        raise GraphError(
            f"graph file {source!r}: its functions call each other {len(chain)} levels deep "
            f"({shown}); tf2npu graph inspect follows at most {MAX_FUNCTION_DEPTH} levels; "
            "inline the nested functions (e.g. freeze the graph) or inspect a part of it"
        )


def deepest_call_chain(graph_def: Any) -> list[str]:
    """The longest chain of library functions calling each other (cycles are cut)."""
    calls = {f.signature.name: _callees(f.node_def) for f in graph_def.library.function}
    depth: dict[str, list[str]] = {}
    # Iterative post-order walk: the chains are what may be too deep for Python's recursion.
    for root in calls:
        stack: list[tuple[str, bool]] = [(root, False)]
        on_path: set[str] = set()
        while stack:
            name, done = stack.pop()
            if done:
                on_path.discard(name)
                below = [depth[c] for c in calls[name] if c in depth and c not in on_path]
                depth[name] = [name, *max(below, key=len, default=[])]
                continue
            if name in depth or name in on_path:
                continue
            on_path.add(name)
            stack.append((name, True))
            stack.extend((c, False) for c in calls[name] if c in calls)
    return max(depth.values(), key=len, default=[])


def _callees(nodes: Any) -> set[str]:
    """Function names ``nodes`` call: as the op type, or through a ``func`` attribute."""
    names: set[str] = set()
    for node in nodes:
        names.add(node.op)
        for attr in node.attr.values():
            if attr.HasField("func"):
                names.add(attr.func.name)
            names.update(f.name for f in attr.list.func)
    return names
