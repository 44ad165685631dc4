"""Placements inside function bodies (while/cond v2 branches, ``tf.function``s, dataset fns).

The adapter never partitions a function body on its own (``MarkNoNeedOptimizePass``): a body
runs wherever its caller runs, compiled whole into the caller's GeOp or executed by TF on the
host. So a body node is

* host with its own reason if it is itself a host op, else host because its function contains
  one (``in_host_function``), when the body is not fully supported;
* on the device when some device node calls the function, directly or through other bodies,
  or when nothing calls it (a library function judged on its own);
* host (``called_from_host``) when only host nodes call it, e.g. a dataset ``map`` function.
"""

from __future__ import annotations

from collections import deque

from tf2npu.graph.decisions import Placement
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.placement.predicates import Support, function_refs
from tf2npu.graph.placement.reasons import device, host

__all__ = ["place_functions"]


def place_functions(
    root: Graph, top: dict[str, Placement], support: Support
) -> dict[str, dict[str, Placement]]:
    """Body placements by function name, then node name."""
    on_device, host_caller = _callers(root, top)
    out: dict[str, dict[str, Placement]] = {}
    for name, body in root.functions.items():
        verdict = support.function(name)
        decided: dict[str, Placement] = {}
        if verdict is not None:
            shared = host(
                "in_host_function",
                f"in function {name!r} that contains host op {verdict.node!r}",
            )
            for node in body:
                own = None if node.op == "Const" else support.op(node)
                decided[node.name] = own if own is not None else shared
        elif name in on_device or name not in host_caller:
            for node in body:
                decided[node.name] = device()
        else:
            shared = host(
                "called_from_host",
                f"in function {name!r}, called only by host nodes (first: {host_caller[name]!r})",
            )
            for node in body:
                decided[node.name] = shared
        out[name] = decided
    return out


def _callers(root: Graph, top: dict[str, Placement]) -> tuple[set[str], dict[str, str]]:
    """Functions reached from device nodes, and (function → first host caller) for the rest."""
    on_device: set[str] = set()
    host_caller: dict[str, str] = {}
    queue: deque[tuple[str, bool, str]] = deque()
    for node in root:
        placement = top.get(node.name)
        is_device = placement is not None and placement.device
        for name in _called(root, node):
            queue.append((name, is_device, node.name))
    while queue:
        name, is_device, caller = queue.popleft()
        body = root.functions.get(name)
        if body is None:
            continue
        if is_device:
            if name in on_device:
                continue
            on_device.add(name)
        else:
            if name in host_caller:
                continue
            host_caller[name] = caller
        for inner in body:
            for called in _called(root, inner):
                queue.append((called, is_device, caller))
    return on_device, host_caller


def _called(root: Graph, node: Node) -> list[str]:
    names = list(function_refs(node))
    if node.op in root.functions:
        names.append(node.op)
    return names
