"""Lookup tables split across the host/device boundary ("Table not initialized", seed 000).

A table lives in the resource manager of the device that created it. Its initialiser runs in
its own ``session.run`` (``tables_initializer``) where only the table ops are present, so the
creator and initialiser go where the op library alone puts them (their step-3 verdict). A
lookup runs where the placement pass puts it. In full offload the gray table ops count as
device ops, so a table created and initialised on the device and read by the host input
pipeline (a dataset ``map`` function, or a lookup pushed to the host by propagation) reads a
table that was never initialised there, and TF fails with "Table not initialized".

For each table creator the check follows ``DT_RESOURCE`` edges (through pass-through ops such
as ``Identity``) to every user once, so it is linear in the edges it follows.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from tf2npu.dtypes import DT_RESOURCE
from tf2npu.graph.decisions import Diagnostics, Placement
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.placement.predicates import Support
from tf2npu.graph.placement.propagation import OutEdges
from tf2npu.graph.placement.tensors import EdgeTypes

__all__ = ["CREATORS", "INITIALIZERS", "TableSplit", "find_table_splits", "report"]

CREATORS = frozenset(
    {
        "HashTableV2",
        "MutableHashTableV2",
        "MutableHashTableOfTensorsV2",
        "MutableDenseHashTableV2",
        "AnonymousHashTable",
        "AnonymousMutableHashTable",
        "AnonymousMutableHashTableOfTensors",
        "AnonymousMutableDenseHashTable",
    }
)
INITIALIZERS = frozenset(
    {
        "InitializeTableV2",
        "InitializeTableFromTextFileV2",
        "InitializeTableFromDataset",
        "LookupTableImportV2",
    }
)


@dataclass(frozen=True, slots=True)
class TableSplit:
    """A table used on the other side of the split from where it is created and initialised."""

    table: str
    table_op: str
    table_on_device: bool
    user: str
    user_op: str


def find_table_splits(
    graph: Graph,
    support: Support,
    final: dict[str, Placement],
    types: EdgeTypes,
    edges: OutEdges,
) -> list[TableSplit]:
    """Every (table, user) pair that runs on different sides, in graph order."""
    splits: list[TableSplit] = []
    for node in graph:
        if node.op not in CREATORS:
            continue
        users = _resource_users(graph, node, types, edges)
        initialised = any(u.op in INITIALIZERS for u in users)
        side = _alone(support, types, node) if initialised else _on_device(final, node)
        for user in users:
            if user.op in INITIALIZERS:
                user_side = _alone(support, types, user)
            else:
                user_side = _on_device(final, user)
            if user_side != side:
                splits.append(TableSplit(node.name, node.op, side, user.name, user.op))
    return splits


def report(splits: list[TableSplit], diagnostics: Diagnostics) -> None:
    """One ``table_split`` error per split, naming both nodes, the failure and the fix."""
    for split in splits:
        table_side = "device" if split.table_on_device else "host"
        user_side = "host" if split.table_on_device else "device"
        if split.table_on_device:
            fix = (
                "keep the table ops together: set mix_compile_mode=True so the gray table ops "
                "(HashTableV2, InitializeTableV2, LookupTableFindV2) stay on the host with the "
                f"lookup in {split.user!r}"
            )
        else:
            fix = (
                f"keep the table ops together: do the lookup of {split.user!r} in the host input "
                "pipeline (a dataset map function) next to the table, or set "
                "mix_compile_mode=True so every table op stays on the host"
            )
        diagnostics.error(
            "table_split",
            f"lookup table {split.table!r} ({split.table_op}) is created and initialised on the "
            f"{table_side} (where tables_initializer runs it) but {split.user!r} "
            f"({split.user_op}) uses it on the {user_side}; the {user_side} holds its own, never "
            "initialised table, so the step fails with 'Table not initialized'",
            node=split.table,
            fix=fix,
        )


def _resource_users(graph: Graph, table: Node, types: EdgeTypes, edges: OutEdges) -> list[Node]:
    """Nodes reading the table handle, following pass-through ops that forward a resource."""
    seen = {table.name}
    users: list[Node] = []
    queue = deque([table])
    while queue:
        node = queue.popleft()
        for user, _, ref in edges.get(node.name, ()):
            if user.name in seen or types.dtype(ref) != DT_RESOURCE:
                continue
            seen.add(user.name)
            if user.op not in INITIALIZERS and types.has_output(user, DT_RESOURCE):
                queue.append(user)
            else:
                users.append(user)
    return users


def _alone(support: Support, types: EdgeTypes, node: Node) -> bool:
    """Where ``node`` runs in a ``session.run`` holding only the table ops (its own verdict)."""
    return support.node(node, types) is None


def _on_device(placements: dict[str, Placement], node: Node) -> bool:
    placement = placements.get(node.name)
    return placement is not None and placement.device
