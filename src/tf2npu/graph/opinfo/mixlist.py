"""``modify_mixlist`` edits in the graph's terms: the GE op types a mixlist names, as TF op types.

Ascend's lists and the ``modify_mixlist`` file name GE op types: seed 000 (case 04) fixes a slow
float16 ``ReduceSum`` with ``{"black-list": {"to-add": ["ReduceSumD"]}}``. The graphs the engine
decides hold TF op types (``Sum``). A name here denotes the TF op type of that name (if the op
library lists it) and every TF op type whose GE op it is (``ReduceSumD`` -> ``Sum``,
``MatMulV2`` -> ``MatMul``, ``BatchMatMul`` -> ``BatchMatMul`` and ``BatchMatMulV2``). A name
that denotes nothing changes nothing, as on the device, and is reported as a warning.

>>> from tf2npu.graph.opinfo import load_default
>>> edits = Mixlist.parse('{"black-list": {"to-add": ["ReduceSumD"]}}')
>>> resolve(edits, load_default()).mixlist.added
(('Sum', <PrecisionClass.DENY: 'deny'>),)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tf2npu.config.mixlist import Mixlist
from tf2npu.config.precision import LIST_NAMES, PrecisionClass
from tf2npu.errors import ConfigError

if TYPE_CHECKING:
    from tf2npu.graph.decisions import Diagnostics
    from tf2npu.graph.opinfo import OpLibrary

__all__ = ["Resolved", "apply", "resolve"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """The edits on TF op types, and the names that denote no op type of the library."""

    mixlist: Mixlist
    unmatched: tuple[str, ...] = ()


def resolve(mixlist: Mixlist, library: OpLibrary) -> Resolved:
    """``mixlist`` with every name replaced by the TF op types it denotes.

    An unmatched name is kept as it is (it may name an op type the library does not list).

    Raises:
        ConfigError: two names added to different lists denote the same TF op type
            (``MatMul`` to the white list and ``MatMulV2`` to the black list).
    """
    unmatched: list[str] = []
    added: dict[str, tuple[PrecisionClass, str]] = {}
    for name, target in mixlist.added:
        for op in _op_types(name, library, unmatched):
            prior = added.get(op)
            if prior is not None and prior[0] is not target:
                raise ConfigError(
                    f"modify_mixlist: {prior[1]!r} ({_list_name(prior[0])}) and {name!r} "
                    f"({_list_name(target)}) both denote the TF op type {op!r}; add it to one "
                    "list only"
                )
            added[op] = (target, name)
    removed = tuple(
        (cls, op) for cls, name in mixlist.removed for op in _op_types(name, library, unmatched)
    )
    edits = Mixlist(tuple((op, target) for op, (target, _) in added.items()), removed)
    return Resolved(edits, tuple(dict.fromkeys(unmatched)))


def apply(
    mixlist: Mixlist,
    library: OpLibrary,
    classes: Mapping[str, PrecisionClass],
    diagnostics: Diagnostics,
) -> dict[str, PrecisionClass]:
    """``classes`` after ``mixlist``; each unmatched name becomes a ``mixlist_unknown_op``
    warning."""
    resolved = resolve(mixlist, library)
    for name in resolved.unmatched:
        diagnostics.warning(
            "mixlist_unknown_op",
            f"modify_mixlist names {name!r}, which is neither a TF op type nor the GE op type "
            "of one in the op library; it changes nothing",
            fix=_hint(name, library),
        )
    return resolved.mixlist.apply(classes)


def _op_types(name: str, library: OpLibrary, unmatched: list[str]) -> tuple[str, ...]:
    found = library.op_types_named(name)
    if found:
        return found
    unmatched.append(name)
    return (name,)


def _hint(name: str, library: OpLibrary) -> str:
    # GE keeps a constant-attribute twin of many ops (ReduceSum / ReduceSumD); profiles show
    # one name while the lists hold the other, as in seed 000's case 04.
    twin = name.removesuffix("D") if name.endswith("D") else f"{name}D"
    ops = library.op_types_named(twin)
    if ops:
        return f"write {twin!r} (the GE op type of TF {', '.join(ops)})"
    return "write the GE op type (as in the ops-info file) or the TF op type of the op"


def _list_name(cls: PrecisionClass) -> str:
    return next(name for name, target in LIST_NAMES.items() if target is cls)
