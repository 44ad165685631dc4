"""Applying the rows of :mod:`tf2npu.migrate.tables.renames` that belong to one rule."""

from __future__ import annotations

from collections.abc import Iterable

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.index import Ref
from tf2npu.migrate.rules._patches import clash, removed
from tf2npu.migrate.tables.renames import renames_for


def apply_renames(ctx: FileContext, rule: str, refs: Iterable[Ref]) -> list[Ref]:
    """Rename every reference in ``refs`` that the rule's table rows cover.

    Returns the references that are gone afterwards: renamed here, or inside text that an earlier
    patch replaces. A reference whose rename would overlap another patch is left as it is (and
    not returned), so the caller can report it.
    """
    table = renames_for(rule)
    gone: list[Ref] = []
    needs_import = False
    for ref in refs:
        row = table.get(ref.name)
        if row is None:
            continue
        start, end = ctx.span(ref.node)
        if removed(ctx, start, end):
            gone.append(ref)
            continue
        edit = ctx.replace(ref.node, row.new)
        if clash(ctx, [edit]) is None and ctx.patch(rule, ref.node, [edit]):
            gone.append(ref)
            needs_import = True
    if needs_import:
        ctx.need_import()
    return gone
