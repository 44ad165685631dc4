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
from tf2npu.migrate.project import module_holders

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


def find_handles(
    ctx: FileContext, module_names: dict[str, str], holders: tuple[str, ...] = ()
) -> Handles:
    """Handles in the file: parameters, globals holding Horovod, and other modules' holders.

    ``module_names`` maps the names the file binds to Horovod modules to their canonical prefix
    (``hvd`` -> ``hvd``, ``hvdk`` -> ``hvd.keras``); parameters are handle candidates only in a
    file that imports Horovod (``module_names`` not empty). ``holders`` are the project's
    globals holding Horovod (:func:`tf2npu.migrate.project.horovod_holders`).
    """
    found = Handles(parents=ctx.index.tree_parents())
    if module_names:
        _parameters(ctx, module_names, found)
    if module_names:  # only a file that imports Horovod can hold it
        for name, prefix in module_holders(ctx.tree, ctx.index):
            _check_global(ctx, name, prefix, found)
    if holders:
        found.refs += _foreign_holder_refs(ctx, found.parents, holders)
    return found


def _parameters(ctx: FileContext, module_names: dict[str, str], found: Handles) -> None:
    candidates = {**{CONVENTIONAL: "hvd"}, **module_names}
    for func in ctx.index.nodes():
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        args = func.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            prefix = candidates.get(arg.arg)
            if prefix is not None:
                _check_parameter(ctx, func, arg.arg, prefix, found)


def _check_parameter(
    ctx: FileContext, func: _Function, name: str, prefix: str, found: Handles
) -> None:
    _check_uses(ctx, _uses(ctx, found.parents, func, name), name, prefix, found)


def _check_global(ctx: FileContext, name: str, prefix: str, found: Handles) -> None:
    """A module global assigned the Horovod module (and maybe stand-ins): every load of it."""
    resolver, parents = ctx.index.resolver, found.parents
    uses = []
    for node in ctx.index.nodes():
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            home = resolver.bindings_of(name, _innermost(ctx, parents, node, resolver.module))
            if home is not None and home[0] is resolver.module:
                uses.append(node)
    _check_uses(ctx, uses, name, prefix, found)


def _check_uses(
    ctx: FileContext, uses: list[ast.Name], name: str, prefix: str, found: Handles
) -> None:
    refs: list[Ref] = []
    plain: set[int] = set()
    parents = found.parents
    for node in uses:
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


def _foreign_holder_refs(
    ctx: FileContext, parents: dict[int, ast.AST], holders: tuple[str, ...]
) -> list[Ref]:
    """``wrapper.holder.X`` where ``wrapper`` is imported from a module holding Horovod.

    The import may name the module from a deeper root than SRC (``utils.hvd_wrapper`` for
    ``ConvNets/utils/hvd_wrapper.py`` when SRC is a parent folder), so the holder's dotted path
    must end with what the file resolves.
    """
    table = [h.rsplit("=", 1) for h in holders if "=" in h]
    refs: list[Ref] = []
    for node in ctx.index.nodes():
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            continue  # not the whole dotted name
        parts = _dotted_parts(node)
        if parts is None:
            continue
        scope = scope_of(ctx, parents, node)
        base = ctx.index.resolver.resolve_name(parts[0], scope)
        if base is None:
            continue
        full = [*base.split("."), *parts[1:]]
        for holder, prefix in table:
            api = _holder_api(full, holder)
            if api:
                call = parent if isinstance(parent, ast.Call) and parent.func is node else None
                name = canonical(".".join([prefix, *api]))
                refs.append(Ref(node, name, "call" if call else "attribute", scope, call))
                break
    return refs


def _holder_api(full: list[str], holder: str) -> list[str]:
    """The attribute path after ``holder`` in ``full``, when ``full`` goes through it."""
    for i in range(1, len(full) - 1):
        seen = ".".join(full[: i + 1])
        if holder == seen or holder.endswith("." + seen):
            return full[i + 1 :]
    return []


def _dotted_parts(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


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
