"""Lookup tables and variables that the input pipeline uses (seed 000 cases 01 and 02).

Shared by the hazards rule, which reports them, and by the NPU-config writers, which turn mixed
compute on for a file whose pipeline reads a lookup table (see :mod:`._npu_config`). Both ask
once per pass: the answer is kept in ``ctx.memo``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.names import Scope
from tf2npu.migrate.rules._pipeline import Entry, Pipeline, find_pipeline
from tf2npu.migrate.tables.hazards import LOOKUP_TABLE_APIS, VARIABLE_APIS

_PIPELINE = "pipeline"
_RESOURCES = "pipeline_resources"


@dataclass(frozen=True, slots=True)
class Resource:
    """A table or variable created or read inside a pipeline function."""

    node: ast.AST
    """Where it is created or read (the finding's position)."""
    api: str
    what: str
    """How a message names it: ``lookup table `table` (tf.lookup.StaticHashTable, line 2)``."""
    entry: Entry

    @property
    def is_table(self) -> bool:
        return self.api in LOOKUP_TABLE_APIS


def pipeline(ctx: FileContext) -> Pipeline:
    """The file's input-pipeline functions (found once per pass)."""
    found = ctx.memo.get(_PIPELINE)
    if not isinstance(found, Pipeline):
        found = find_pipeline(ctx)
        ctx.memo[_PIPELINE] = found
    return found


def pipeline_resources(ctx: FileContext) -> tuple[Resource, ...]:
    """Tables and variables the pipeline creates or reads, in the order they are found."""
    found = ctx.memo.get(_RESOURCES)
    if isinstance(found, tuple):
        return found
    resources = _find(ctx, pipeline(ctx)) if ctx.index.refs else ()
    ctx.memo[_RESOURCES] = resources
    return resources


def pipeline_tables(ctx: FileContext) -> tuple[Resource, ...]:
    """The lookup tables among :func:`pipeline_resources`."""
    return tuple(r for r in pipeline_resources(ctx) if r.is_table)


def _find(ctx: FileContext, found: Pipeline) -> tuple[Resource, ...]:
    resources: list[Resource] = []
    created: set[int] = set()
    for ref in ctx.index.calls_to(*LOOKUP_TABLE_APIS, *VARIABLE_APIS):
        entry = found.owner(ref.call)
        if entry is not None and ref.call is not None:
            created.add(id(ref.call))
            resources.append(Resource(ref.call, ref.name, kind(ref.name), entry))
    reported: set[tuple[int, int]] = set()
    for name, scope, entry in found.names:
        made = made_by(ctx, name, scope, LOOKUP_TABLE_APIS | VARIABLE_APIS)
        if made is None or id(made[0]) in created or (id(entry), id(made[0])) in reported:
            continue
        reported.add((id(entry), id(made[0])))
        call, api = made
        what = f"{kind(api)} `{name.id}` ({api}, line {call.lineno})"
        resources.append(Resource(name, api, what, entry))
    return tuple(resources)


def kind(api: str) -> str:
    return "variable" if api in VARIABLE_APIS else "lookup table"


def made_by(
    ctx: FileContext, name: ast.Name, scope: Scope, apis: frozenset[str]
) -> tuple[ast.Call, str] | None:
    """The call to one of ``apis`` that every binding of ``name`` assigns, if there is one."""
    bound = ctx.index.resolver.bindings_of(name.id, scope)
    if bound is None:
        return None
    made: tuple[ast.Call, str] | None = None
    for binding in bound[1]:
        value = binding.value
        api = ctx.index.callee(value) if isinstance(value, ast.Call) else None
        if api is None or api not in apis:
            return None
        assert isinstance(value, ast.Call)
        made = made or (value, api)
    return made
