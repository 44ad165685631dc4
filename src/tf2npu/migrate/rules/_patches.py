"""How a rule's edits relate to the patches earlier rules already recorded.

The engine drops a patch that overlaps an earlier one. A rule whose other decisions depend on its
own edits being applied (the horovod rule removes the import only when every use is rewritten)
checks here first, instead of finding out after the engine has dropped its patch.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit, Patch


def clash(ctx: FileContext, edits: Iterable[Edit | None]) -> Patch | None:
    """The first recorded patch that overlaps one of ``edits`` (which the engine would keep)."""
    wanted = [e for e in edits if e is not None]
    for patch in ctx.patches:
        if any(a.overlaps(b) for a in patch.edits for b in wanted):
            return patch
    return None


def removed(ctx: FileContext, start: int, end: int) -> bool:
    """True when a recorded edit replaces text around all of ``[start, end)`` (it goes away)."""
    return any(
        e.start <= start and end <= e.end and e.start < e.end
        for patch in ctx.patches
        for e in patch.edits
    )


def removed_lines(ctx: FileContext, first: int, last: int) -> set[int]:
    """Lines in ``first..last`` that a recorded edit deletes whole, line ending included."""
    source = ctx.source
    gone: set[int] = set()
    for patch in ctx.patches:
        for e in patch.edits:
            if e.new or e.start == e.end:
                continue
            for line in range(first, last + 1):
                if e.start <= source.line_start(line) and source.line_end(line) <= e.end:
                    gone.add(line)
    return gone


def record(
    ctx: FileContext, rule: str, subject: ast.AST, edits: Sequence[Edit | None], npu: bool = False
) -> bool:
    """Record ``edits`` as one patch of ``rule`` unless one is impossible (None) or clashes.

    ``npu``: the change introduces NPU names, so the ``npu_init`` import is asked for first
    (before any other import the rewrite asks for). True when the patch was recorded.
    """
    if any(e is None for e in edits) or clash(ctx, edits) is not None:
        return False
    done = ctx.patch(rule, subject, edits)
    if done and npu:
        ctx.need_import()
    return done
