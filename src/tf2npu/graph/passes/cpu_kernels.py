"""Whether this TensorFlow has a CPU kernel for a node, read from TF's kernel registry.

The passes decide dtypes for the Ascend device: the precision pass puts float32 nodes into
float16 (or bfloat16) wherever the *device* has the kernel, and fusion rules emit TF's fused ops
(``_FusedMatMul``, ``_FusedConv2D``) in whatever dtype their inputs have. The CPU kernels of
TensorFlow 2.15 do not cover every such pair (``_FusedMatMul`` has float and bfloat16 kernels
only; ``FusedBatchNormV3`` needs ``U=float``), and a session then fails at run time with "No
OpKernel was registered". :class:`CpuKernels` answers, per node, whether a CPU kernel matches
its attrs, so the lowering pass can give the few nodes without one a CPU-runnable form.

A ``KernelDef`` matches a node when every constraint's attr (the node's value, else the op's
default) lies in the constraint's allowed dtypes, and its label equals the node's ``_kernel``
attr. Answers are cached per (op, constrained attr values), so a graph costs one registry
lookup per op type and one dict lookup per node.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tf2npu.dtypes import DT_BFLOAT16, DT_HALF
from tf2npu.graph._opdef import default_of, op_def_for
from tf2npu.graph.ir import Node

__all__ = [
    "LOW_FLOATS",
    "CpuKernels",
    "KernelConstraint",
    "cpu_constraints",
    "has_low_float",
]

#: The lower float dtypes the precision pass produces (``DT_HALF``, ``DT_BFLOAT16``).
LOW_FLOATS = frozenset({DT_HALF, DT_BFLOAT16})
#: The node attr selecting a labelled kernel (``KernelDef.label``).
_LABEL_ATTR = "_kernel"


@dataclass(frozen=True, slots=True)
class KernelConstraint:
    """One CPU ``KernelDef`` as plain values: its label and allowed dtypes per attr."""

    label: str
    allowed: tuple[tuple[str, frozenset[int]], ...]

    def admits(self, values: dict[str, tuple[int, ...] | None], label: str) -> bool:
        """Whether a node with these constrained attr values (and ``_kernel`` label) matches."""
        if label != self.label:
            return False
        for name, allowed in self.allowed:
            found = values.get(name)
            if found is None or not found or any(d not in allowed for d in found):
                return False
        return True


def cpu_constraints(op: str) -> tuple[KernelConstraint, ...] | None:
    """The CPU kernels registered for ``op``; ``None`` when TF registers no kernel for it at all
    (a library function, or an op this TensorFlow does not know: nothing to judge)."""
    from tensorflow.python.framework import kernels

    registered = kernels.get_registered_kernels_for_op(op).kernel
    if not registered:
        return None
    return tuple(
        KernelConstraint(
            k.label,
            tuple((c.name, frozenset(c.allowed_values.list.type)) for c in k.constraint),
        )
        for k in registered
        if k.device_type == "CPU"
    )


class CpuKernels:
    """Answers :meth:`runs` for nodes; one instance per lowering run (it caches)."""

    def __init__(self) -> None:
        # op -> (its CPU kernels, the attr names they constrain), None: TF registers none
        self._kernels: dict[str, tuple[tuple[KernelConstraint, ...], tuple[str, ...]] | None] = {}
        self._answers: dict[tuple[object, ...], bool] = {}

    def runs(self, node: Node, attrs: dict[str, Any] | None = None) -> bool:
        """Whether a CPU kernel matches ``node`` (with ``attrs`` in place of its own, if given).

        Nodes TF registers no kernel for (function calls, unknown ops) count as runnable: this
        check is about dtypes, not about ops the engine never meant to run as TF kernels.
        """
        op = node.op
        if op not in self._kernels:
            found = cpu_constraints(op)
            constrained = sorted({name for k in found or () for name, _ in k.allowed})
            self._kernels[op] = None if found is None else (found, tuple(constrained))
        entry = self._kernels[op]
        op_def = op_def_for(node) if entry is not None else None
        if entry is None or op_def is None:
            return True
        kernels, names = entry
        own = node.attrs if attrs is None else attrs
        values = {name: _dtypes(_value(op_def, own, name)) for name in names}
        label_value = own.get(_LABEL_ATTR)
        label = label_value.s.decode() if label_value is not None else ""
        key = (op, label, *values.values())
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = any(k.admits(values, label) for k in kernels)
        return answer


def has_low_float(attrs: Iterable[Any]) -> bool:
    """Whether any attr holds (or lists) a lower float dtype: only such nodes need a look."""
    for value in attrs:
        if getattr(value, "type", 0) in LOW_FLOATS:
            return True
        listed = getattr(getattr(value, "list", None), "type", ())
        if any(d in LOW_FLOATS for d in listed):
            return True
    return False


def _value(op_def: Any, attrs: dict[str, Any], name: str) -> Any:
    found = attrs.get(name)
    return found if found is not None else default_of(op_def, name)


def _dtypes(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if value.HasField("type"):
        return (value.type,)
    if value.HasField("list"):
        return tuple(value.list.type)
    return None
