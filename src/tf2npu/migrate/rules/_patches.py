"""How a rule's edits relate to the patches earlier rules already recorded.

The engine drops a patch that overlaps an earlier one. A rule whose other decisions depend on its
own edits being applied (the horovod rule removes the import only when every use is rewritten)
checks here first, instead of finding out after the engine has dropped its patch.
"""

from __future__ import annotations

from collections.abc import Iterable

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
