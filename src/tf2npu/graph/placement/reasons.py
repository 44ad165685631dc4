"""Why a node runs where it does: every placement reason slug, its vendor code and its sentence.

Codes are those of the vendor's ``check_result.tf.json``: 1 not defined on the device, 2 gray
op in mixed compute, 3 scenario problem (propagation, frames, scopes, resource rules,
whole-graph rules), 4 not supported (dataset ops, Const or _Arg on their own). A device node
has code 0. Slugs are stable: reports, tests and ``docs/placement.md`` use them verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass

from tf2npu.graph.decisions import Placement

__all__ = ["REASONS", "Reason", "device", "host"]


@dataclass(frozen=True, slots=True)
class Reason:
    """One placement reason: its slug, vendor code and what it means (for the docs)."""

    slug: str
    code: int
    meaning: str


REASONS: dict[str, Reason] = {
    r.slug: r
    for r in (
        Reason("supported", 0, "runs on the device"),
        Reason("const_pulled", 0, "a Const feeding a device node, or control-dependent on one"),
        Reason("not_in_library", 1, "op type not in the device op library"),
        Reason("gray_op", 2, "gray op: host in mixed compute"),
        Reason("dataset_op", 4, "tf.data dataset op: never compiled"),
        Reason("not_compiled", 4, "Const, _Arg, _Retval, StringJoin: never compiled on their own"),
        Reason("unread", 4, "a Const no node reads (left over by gradients): never runs"),
        Reason("feed", 4, "Placeholder: fed from the host each step (an _Arg at run time)"),
        Reason("without_npu_compile", 3, "under without_npu_compile_scope (mixed compute)"),
        Reason("resource_op", 3, "consumes or produces a non-variable resource (mixed compute)"),
        Reason("variable_placement", 3, "a variable kept on the host by variable_placement=Host"),
        Reason("function_host_op", 3, "calls a function whose body contains a host op"),
        Reason("in_host_function", 3, "inside a function whose body contains a host op"),
        Reason("called_from_host", 3, "inside a function that only host nodes call"),
        Reason("iterator_unpaired", 4, "Iterator/IteratorGetNext not in an Iterator->GetNext pair"),
        Reason("frame", 3, "inside a v1 while frame that contains a host op (mixed compute)"),
        Reason("ref_edge", 3, "reads or feeds a ref tensor across the host boundary"),
        Reason("string_edge", 3, "reads or feeds a string tensor across the host boundary"),
        Reason("resource_edge", 3, "reads or feeds a resource tensor across the host boundary"),
        Reason("variant_edge", 3, "reads or feeds a variant tensor across the host boundary"),
        Reason("host_call_graph", 3, "in the host-call graph of an outfeed dequeue op"),
        Reason("dataset_init_graph", 3, "in the dataset-initialisation graph of a MakeIterator"),
    )
}


def host(reason: str, message: str) -> Placement:
    """A host placement with the vendor code of ``reason`` (a slug from :data:`REASONS`)."""
    return Placement(False, REASONS[reason].code, reason, message)


_SUPPORTED = Placement(True, 0, "supported", "")


def device(reason: str = "supported", message: str = "") -> Placement:
    """A device placement (code 0); the plain one is shared, placements being immutable."""
    if reason == "supported" and not message:
        return _SUPPORTED
    return Placement(True, 0, reason, message)
