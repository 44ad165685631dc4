"""Small text helpers shared by rules."""

from __future__ import annotations

import ast

_ATOMS = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript, ast.List, ast.Tuple)


def as_operand(node: ast.expr, text: str) -> str:
    """``text`` of ``node``, parenthesised unless it is atomic (safe inside ``1 - <here>``)."""
    if isinstance(node, _ATOMS) and not (isinstance(node, ast.Tuple) and not text.startswith("(")):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, (int, float))
                and str(text).startswith("-")):  # fmt: skip
            return text
    return f"({text})"


def is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
