"""Horovod passed around as a value: ``def f(..., hvd=None)`` called with the Horovod module.

NVIDIA's BERT trainers pass the module to their builders (``hvd=None if not FLAGS.horovod else
hvd``), which test it against None and call ``hvd.rank()``, ``hvd.DistributedOptimizer(...)``
through it. Such a parameter is a *handle*: every use of it is an attribute, a test (``is
None``, truth) or forwarding it to another call. Its attribute uses are then Horovod API uses
the horovod rule rewrites like any other, and the module passed as an argument becomes ``True``
(the handles only ever test it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.index import Ref
from tf2npu.migrate.names import Scope, canonical

CONVENTIONAL = "hvd"
"""The alias Horovod's documentation uses; a parameter of that name in a file importing Horovod
is a handle candidate even when the file binds the module to another name (or not at all)."""


@dataclass
class Handles:
    """The handle parameters of one file and what their uses mean."""

    refs: list[Ref] = field(default_factory=list)
    """Attribute uses of handles, as Horovod API references (``hvd.rank`` ...)."""
    plain: set[int] = field(default_factory=set)
    """ids of handle Name nodes used only as a value (tests, forwarding): never Horovod calls."""
    names: set[str] = field(default_factory=set)
    """Parameter names found to be handles."""
    parents: dict[int, ast.AST] = field(default_factory=dict)
    """id(node) -> parent for every node (the shared index skips the inside of dotted names)."""


def find_handles(ctx: FileContext, module_names: dict[str, str]) -> Handles:
    """Handle parameters among the file's functions.

    ``module_names`` maps the names the file binds to Horovod modules to their canonical prefix
    (``hvd`` -> ``hvd``, ``hvdk`` -> ``hvd.keras``).
    """
    found = Handles(parents=parent_map(ctx.tree))
    candidates = {**{CONVENTIONAL: "hvd"}, **module_names}
    for func in ast.walk(ctx.tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        args = func.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            prefix = candidates.get(arg.arg)
            if prefix is not None:
                _check_parameter(ctx, func, arg.arg, prefix, found)
    return found


def _check_parameter(
    ctx: FileContext, func: _Function, name: str, prefix: str, found: Handles
) -> None:
    refs: list[Ref] = []
    plain: set[int] = set()
    parents = found.parents
    for node in _uses(ctx, parents, func, name):
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            ref = _attribute_ref(ctx, parents, node, prefix)
            if ref is None:
                return  # assigned to (``hvd.x = 1``): not a module handle
            refs.append(ref)
        elif _is_test_or_forward(parents, node, parent):
            plain.add(id(node))
        else:
            return  # used as something else: not provably a handle
    if refs or plain:
        found.refs += refs
        found.plain |= plain
        found.names.add(name)


_Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _uses(
    ctx: FileContext, parents: dict[int, ast.AST], func: _Function, name: str
) -> list[ast.Name]:
    """Loads of ``name`` that see the parameter of ``func`` (none if it is ever re-bound)."""
    resolver = ctx.index.resolver
    own = resolver.scope_of.get(id(func))
    if own is None or len(own.bindings.get(name, [])) != 1:
        return []
    uses: list[ast.Name] = []
    body = func.body if isinstance(func.body, list) else [func.body]
    for part in body:
        for node in ast.walk(part):
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            if not isinstance(node.ctx, ast.Load):
                return []
            found = resolver.bindings_of(name, _innermost(ctx, parents, node, own))
            if found is not None and found[0] is own:
                uses.append(node)
    return uses


def scope_of(ctx: FileContext, parents: dict[int, ast.AST], node: ast.AST) -> Scope:
    """The scope of the statement around ``node``."""
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = parents.get(id(current))
    return ctx.index.scope_at(current) if current is not None else ctx.index.resolver.module


def _innermost(
    ctx: FileContext, parents: dict[int, ast.AST], node: ast.AST, default: Scope
) -> Scope:
    """The scope ``node`` is evaluated in: the nearest function or lambda around it."""
    current = parents.get(id(node))
    while current is not None:
        scope = ctx.index.resolver.scope_of.get(id(current))
        if scope is not None:
            return scope
        current = parents.get(id(current))
    return default


def parent_map(tree: ast.AST) -> dict[int, ast.AST]:
    """id(node) -> parent, for every node of ``tree``."""
    return {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}


def _attribute_ref(
    ctx: FileContext, parents: dict[int, ast.AST], node: ast.Name, prefix: str
) -> Ref | None:
    top: ast.expr = node
    parts = [prefix]
    parent = parents.get(id(top))
    while isinstance(parent, ast.Attribute) and parent.value is top:
        parts.append(parent.attr)
        top = parent
        parent = parents.get(id(top))
    if not isinstance(getattr(top, "ctx", None), ast.Load):
        return None
    call = parent if isinstance(parent, ast.Call) and parent.func is top else None
    kind = "call" if call else "attribute"
    return Ref(top, canonical(".".join(parts)), kind, scope_of(ctx, parents, node), call)


def _is_test_or_forward(
    parents: dict[int, ast.AST], node: ast.Name, parent: ast.AST | None
) -> bool:
    if isinstance(parent, ast.Compare):
        operands = [parent.left, *parent.comparators]
        is_ops = all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops)
        return is_ops and all(o is node or _is_none(o) for o in operands)
    truth = isinstance(parent, (ast.If, ast.While, ast.BoolOp)) or (
        isinstance(parent, ast.IfExp) and parent.test is node
    )
    if truth or (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)):
        return True
    return is_argument(parents, node)


def is_argument(parents: dict[int, ast.AST], node: ast.expr) -> bool:
    """True when ``node`` is passed to a call (directly, as a keyword, or as a branch of an
    ``a if c else b`` that is)."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.IfExp) and parent.test is not node:
        return is_argument(parents, parent)
    if isinstance(parent, ast.keyword):
        return parent.arg is not None
    return isinstance(parent, ast.Call) and any(a is node for a in parent.args)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
