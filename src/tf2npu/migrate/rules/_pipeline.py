"""Which code runs inside a ``tf.data`` input pipeline: the functions passed to ``Dataset.map``.

A pipeline function is a lambda or a local ``def`` (also through ``functools.partial``) passed to
a pipeline method (``map``, ``flat_map``, ``interleave``, ``filter``) of a value proven to be a
dataset, or to ``map_and_batch`` / ``parallel_interleave``; local functions those call by name
belong to the pipeline too (``ds.map(lambda r: _decode(r, spec))`` runs ``_decode`` there). A
dataset that arrives as a parameter is not proven, so its functions are not analysed: the
analysis stays silent rather than guess.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.names import Scope
from tf2npu.migrate.tables.hazards import PARTIAL, PIPELINE_APIS, PIPELINE_METHODS

FunctionNode = ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True, slots=True)
class Entry:
    """The call that hands a function to the pipeline (``ds.map(parse)``)."""

    call: ast.Call
    via: str
    """How the call reads in a message: ``.map()`` or ``tf.data.experimental.map_and_batch()``."""

    @property
    def where(self) -> str:
        return f"the function passed to {self.via} at line {self.call.lineno}"


@dataclass(slots=True)
class Pipeline:
    """The pipeline functions of one module and the nodes inside them."""

    functions: list[tuple[FunctionNode, Entry]] = field(default_factory=list)
    owners: dict[int, Entry] = field(default_factory=dict)
    """id(node) -> the entry whose pipeline runs it, for every node inside a pipeline function."""
    names: list[tuple[ast.Name, Scope, Entry]] = field(default_factory=list)
    """Every name read inside a pipeline function, with the scope it is read in."""

    def owner(self, node: ast.AST | None) -> Entry | None:
        return self.owners.get(id(node)) if node is not None else None


def find_pipeline(ctx: FileContext) -> Pipeline:
    """The pipeline functions of ``ctx``'s module, with the local functions they call."""
    pipeline = Pipeline()
    queue: list[tuple[FunctionNode, Entry]] = []
    for method, (position, keyword) in PIPELINE_METHODS.items():
        for mc in ctx.index.method_calls.get(method, ()):
            given = ctx.argument(mc.call, position, keyword)
            if given is None or not ctx.kinds.is_dataset(mc.receiver, mc.scope):
                continue
            func = _function_of(ctx, given, mc.scope)
            if func is not None:
                queue.append((func, Entry(mc.call, f".{method}()")))
    for ref in ctx.index.calls_to(*PIPELINE_APIS):
        assert ref.call is not None
        position, keyword = PIPELINE_APIS[ref.name]
        given = ctx.argument(ref.call, position, keyword)
        func = _function_of(ctx, given, ref.scope) if given is not None else None
        if func is not None:
            queue.append((func, Entry(ref.call, f"{ref.name}()")))
    # Each root with everything it calls before the next root: the earliest map call names the
    # pipeline of a function that several of them run (stable messages).
    queue.sort(key=lambda item: (item[1].call.lineno, item[1].call.col_offset))
    seen: set[int] = set()
    for root, entry in queue:
        todo = [root]
        while todo:
            func = todo.pop()
            if id(func) not in seen:
                seen.add(id(func))
                pipeline.functions.append((func, entry))
                todo.extend(_visit(ctx, pipeline, func, entry))
    return pipeline


def _visit(
    ctx: FileContext, pipeline: Pipeline, func: FunctionNode, entry: Entry
) -> list[FunctionNode]:
    """Record the nodes of ``func``; return the local functions it calls by name."""
    called: list[FunctionNode] = []
    for node, scope in _scoped_walk(ctx, func):
        pipeline.owners.setdefault(id(node), entry)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            pipeline.names.append((node, scope, entry))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            callee = _local_def(ctx, node.func.id, scope)
            if callee is not None:
                called.append(callee)
    return called


def _scoped_walk(ctx: FileContext, func: FunctionNode) -> Iterator[tuple[ast.AST, Scope]]:
    """Every node of ``func``'s body with the scope it is evaluated in."""
    scope_of = ctx.index.resolver.scope_of
    own = scope_of[id(func)]
    body: list[ast.AST] = [func.body] if isinstance(func, ast.Lambda) else list(func.body)
    stack: list[tuple[ast.AST, Scope]] = [(node, own) for node in reversed(body)]
    while stack:
        node, scope = stack.pop()
        yield node, scope
        # Nested functions and classes evaluate their bodies in their own scope (close enough for
        # defaults and decorators, which are rare inside a map function).
        inner = scope_of.get(id(node), scope)
        stack.extend((child, inner) for child in reversed(list(ast.iter_child_nodes(node))))


def _function_of(ctx: FileContext, expr: ast.expr, scope: Scope) -> FunctionNode | None:
    """The function an argument denotes: a lambda, a local def by name, or a partial of one."""
    if isinstance(expr, ast.Lambda):
        return expr
    if isinstance(expr, ast.Name):
        return _local_def(ctx, expr.id, scope)
    if isinstance(expr, ast.Call) and expr.args and ctx.index.callee(expr) == PARTIAL:
        return _function_of(ctx, expr.args[0], scope)
    return None


def _local_def(ctx: FileContext, name: str, scope: Scope) -> FunctionNode | None:
    """The ``def`` a name is bound to, when that is its only binding."""
    found = ctx.index.resolver.bindings_of(name, scope)
    if found is None or len(found[1]) != 1:
        return None
    node = found[1][0].value
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
