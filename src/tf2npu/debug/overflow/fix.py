"""The fix for one overflowing op: which op types move to float32 (TF-free).

A float16 result that overflows (|x| > 65504) needs float32. Two knobs do that, both read by the
precision pass: the ``modify_mixlist`` file (``{"black-list": {"to-add": [OpType, ...]}}``
moves those types to float32 everywhere, and float32 spreads forward through gray ops), and
``npu_scope.keep_dtype_scope()`` around the line that creates the op (that op only).

The precision pass judges the *user's* op types before any fusion runs, so the types proposed
here are the user's: a fused op is traced back to the op whose class made it float16
(:data:`FUSED_OP_ROOTS`), and a ``Cast`` the precision mode inserted (a float32 value cast to
float16 for the op that reads it) is fixed by keeping its readers in float32.

>>> propose_fix("_FusedMatMul", "DT_FLOAT16", None, (), ("dense/MatMul",), "train.py:12")
... # doctest: +NORMALIZE_WHITESPACE
Fix(black_list=('MatMul',), keep_dtype_ops=('dense/MatMul',), created_at='train.py:12',
    reason='_FusedMatMul is a fusion; its float16 comes from the MatMul it was made from
    (precision is decided before fusion)')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tf2npu.artifacts.gegraph import GeOp

__all__ = ["FLOAT16", "FUSED_OP_ROOTS", "Fix", "propose_fix"]

FLOAT16 = "DT_FLOAT16"

FUSED_OP_ROOTS: dict[str, tuple[str, ...]] = {
    "_FusedMatMul": ("MatMul",),
    "_FusedConv2D": ("Conv2D",),
}
"""Fused op types the fusion rules emit -> the user's op type whose precision class they
inherit (MatMul and Conv2D are allow-listed, the bias and activation follow them)."""


@dataclass(frozen=True, slots=True)
class Fix:
    """What to change so the op computes in float32."""

    black_list: tuple[str, ...]
    """Op types for ``{"black-list": {"to-add": [...]}}`` (empty: no mixlist fix applies)."""
    keep_dtype_ops: tuple[str, ...]
    """The user's ops to create under ``npu_scope.keep_dtype_scope()``."""
    created_at: str
    """``file.py:LINE`` that creates them, ``""`` when the dump does not say (or, for a Cast,
    names where the tensor it carries was made, not its readers)."""
    reason: str = ""
    """Why these types (a fusion, a Cast, not float16), ``""`` when the op is plainly the
    user's."""


def propose_fix(
    op_type: str,
    dtype: str,
    op: GeOp | None,
    consumers: Sequence[GeOp],
    user_ops: Sequence[str],
    created_at: str,
) -> Fix:
    """The fix for an op of ``op_type`` whose output dtype is ``dtype`` (GE name, ``""`` if
    unknown); ``op`` and ``consumers`` come from the graph JSON when there is one."""
    if dtype and dtype != FLOAT16:
        return Fix(
            (), (), created_at,
            f"its output is {dtype}, not float16: mixed precision did not cause this overflow; "
            "look at the values that reach it (input data, learning rate, loss scale)",
        )  # fmt: skip
    if op_type == "Cast":
        return _cast_fix(consumers)
    types, reason = user_types(op_type, op)
    if not dtype:
        reason = "; ".join(
            filter(None, [reason, "the dump does not give its dtype: the fix assumes float16"])
        )
    return Fix(types, tuple(user_ops), created_at, reason)


def user_types(op_type: str, op: GeOp | None) -> tuple[tuple[str, ...], str]:
    """The user's op types behind ``op_type`` (empty when the dump cannot tell), and why."""
    if op_type in FUSED_OP_ROOTS:
        roots = FUSED_OP_ROOTS[op_type]
        return roots, (
            f"{op_type} is a fusion; its float16 comes from the {', '.join(roots)} it was made "
            "from (precision is decided before fusion)"
        )
    if op is not None and op.type == op_type and _fused(op):
        made_by = f" by {op.pass_name}" if op.pass_name else ""
        return (), (
            f"{op_type} was made{made_by} from {', '.join(op.original_op_names)}; the dump "
            "does not record their types: add the float16 one(s) to the black list by type"
        )
    return (op_type,), ""


def _fused(op: GeOp) -> bool:
    return bool(op.pass_name) or len(op.original_op_names) > 1


def _cast_fix(consumers: Sequence[GeOp]) -> Fix:
    # the record's created_at locates the tensor the Cast carries, not its readers
    if not consumers:
        return Fix(
            (), (), "",
            "a Cast the precision mode inserted: a float32 value beyond 65504 was cast to "
            "float16; no graph JSON names the op that reads it: add that op's type to the "
            "black list",
        )  # fmt: skip
    types: list[str] = []
    for reader in consumers:
        types.extend(user_types(reader.type, reader)[0])
    readers = ", ".join(f"{c.name} ({c.type})" for c in consumers)
    return Fix(
        tuple(dict.fromkeys(types)),
        tuple(dict.fromkeys(name for c in consumers for name in c.origins)),
        "",
        f"a Cast the precision mode inserted: a float32 value beyond 65504 was cast to float16 "
        f"for {readers}; keep the reader(s) in float32",
    )
