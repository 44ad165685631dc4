"""What crosses a GeOp boundary: memcpy transfers, duplicated Consts and variables, args.

Every data edge whose ends lie in different places (a GeOp and the host, or two GeOps) is a
*memcpy edge*, with two exceptions the vendor makes in mixed compute (§3.5 step 8): a ``Const``
read by another GeOp is duplicated into it (``<name>_copied``), and so is a variable
(``VariableV2``/``VarHandleOp``) — those edges copy nothing at run time. A ref variable read by
a host node is an error at the vendor ("Ref Tensors (e.g., Variables) output ... is not in
white list") when the host node takes it through a *ref* input (an ``Assign`` on the host,
say), and is reported as such; a host node reading its value (``SaveV2``) gets it through an
``Identity`` the vendor inserts (``<variable>_dummyIdentity``, §3.5 step 9): a memcpy edge.

A tensor read by several consumers on the same side is transferred once (one ``_Arg`` per
distinct source slot), so bytes are summed per (tensor, destination), while the edge count
counts every consumer input.
"""

from __future__ import annotations

from dataclasses import dataclass

from tf2npu.graph.ir import Node
from tf2npu.graph.partition.cycles import LiveTopology
from tf2npu.graph.partition.sizes import tensor_bytes
from tf2npu.graph.placement.tensors import input_is_ref

__all__ = ["Boundary", "Copy", "Transfer", "boundary"]

HOST = ""
_VARIABLES = frozenset({"VariableV2", "Variable", "VarHandleOp"})
_REF_VARIABLES = frozenset({"VariableV2", "Variable", "TemporaryVariable"})


@dataclass(frozen=True, slots=True)
class Copy:
    """A ``Const`` or variable duplicated into a GeOp that reads it (mixed compute)."""

    node: str
    into: str
    kind: str  # "const" | "variable"


@dataclass(frozen=True, slots=True)
class Transfer:
    """One tensor copied each step from ``source`` to ``dest`` (a GeOp name, ``""`` = host)."""

    tensor: str
    source: str
    dest: str
    edges: int
    bytes: int | None


@dataclass(frozen=True)
class Boundary:
    """Everything that crosses: transfers, copies, ref variables read on the host, GeOp args."""

    transfers: list[Transfer]
    copies: list[Copy]
    ref_to_host: list[tuple[str, str]]
    inputs: dict[str, tuple[str, ...]]
    outputs: dict[str, tuple[str, ...]]


def boundary(topo: LiveTopology, place: list[str], *, mixed: bool) -> Boundary:
    """Classify every data edge whose ends have different ``place`` (GeOp name or host)."""
    nodes, position = topo.nodes, topo.position
    # (producer, output index, dest) -> edges; plain ints and strs hash fast, TensorRefs do not
    found: dict[tuple[int, int, str], int] = {}
    copies: set[Copy] = set()
    ref_to_host: list[tuple[str, str]] = []
    for i, node in enumerate(nodes):
        dest = place[i]
        for slot, ref in enumerate(node.inputs):
            p = position.get(ref.node)
            if p is None or place[p] == dest:
                continue
            source, producer = place[p], nodes[p]
            if mixed and source and dest and producer.op in ("Const", *_VARIABLES):
                kind = "const" if producer.op == "Const" else "variable"
                copies.add(Copy(producer.name, dest, kind))
                continue
            if mixed and source and not dest and _reads_ref(producer, node, slot):
                ref_to_host.append((producer.name, node.name))
            key = (p, ref.index, dest)
            found[key] = found.get(key, 0) + 1
    return _collect(topo, place, found, copies, ref_to_host)


def _reads_ref(producer: Node, reader: Node, slot: int) -> bool:
    """Whether ``reader`` takes a ref variable's output through a ref input at ``slot``.

    Only that cannot cross (the host would update a device variable in place). A plain input
    (``SaveV2`` under a ``Saver``) gets the variable's value: the vendor inserts
    ``<variable>_dummyIdentity`` in the GeOp and the value crosses like any tensor (§3.5 step 9).
    """
    return producer.op in _REF_VARIABLES and input_is_ref(reader, slot)


def _collect(
    topo: LiveTopology,
    place: list[str],
    found: dict[tuple[int, int, str], int],
    copies: set[Copy],
    ref_to_host: list[tuple[str, str]],
) -> Boundary:
    transfers = []
    inputs: dict[str, set[str]] = {}
    outputs: dict[str, set[str]] = {}
    for (p, index, dest), edges in found.items():
        producer = topo.nodes[p]
        source, tensor = place[p], str(producer.output(index))
        size = tensor_bytes(producer, index)
        transfers.append(Transfer(tensor, source, dest, edges, size))
        if source:
            outputs.setdefault(source, set()).add(tensor)
        if dest:
            inputs.setdefault(dest, set()).add(tensor)
    transfers.sort(key=lambda t: (t.tensor, t.dest))
    return Boundary(
        transfers,
        sorted(copies, key=lambda c: (c.into, c.node)),
        ref_to_host,
        {k: tuple(sorted(v)) for k, v in inputs.items()},
        {k: tuple(sorted(v)) for k, v in outputs.items()},
    )
