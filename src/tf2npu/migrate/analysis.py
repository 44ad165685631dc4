"""API analysis: every TF and Horovod API a file uses, classified against the support list."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from tf2npu.migrate.catalog import classify
from tf2npu.migrate.index import ModuleIndex, Ref
from tf2npu.migrate.model import ApiStatus, ApiUse
from tf2npu.migrate.source import SourceFile

_REWRITTEN = frozenset({ApiStatus.MIGRATED_BY_TOOL, ApiStatus.TRAINING_AFTER_MIGRATION})
"""Statuses whose advice depends on whether the use was rewritten."""


def api_uses(
    index: ModuleIndex,
    path: str,
    source: SourceFile | None = None,
    edited: Sequence[tuple[int, int]] = (),
) -> tuple[ApiUse, ...]:
    """One :class:`ApiUse` per resolved reference, in source order.

    ``edited`` holds the ``(start, end)`` offsets in ``source`` of the edits the rules recorded:
    the advice of a use says it was rewritten only when an edit touches the use's text (its
    call, for a call), and that nothing was done to it otherwise.
    """
    spans = sorted(edited)
    starts = [start for start, _ in spans]
    uses: list[ApiUse] = []
    for ref in index.refs:
        api = _reported_name(ref.name)
        info = classify(_lookup_name(api))
        changed = (
            info.status in _REWRITTEN
            and source is not None
            and _touched(source, ref, spans, starts)
        )
        uses.append(
            ApiUse(
                path=path,
                line=ref.node.lineno,
                col=ref.node.col_offset + 1,
                module=info.module,
                api=api,
                status=info.status,
                advice=info.advice_for(changed),
                kind=ref.kind,
            )
        )
    return tuple(uses)


def _touched(source: SourceFile, ref: Ref, spans: list[tuple[int, int]], starts: list[int]) -> bool:
    """Whether an edit lies within (or at the edge of) the use's text."""
    if not spans:
        return False
    start, end = source.span(ref.call if ref.call is not None else ref.node)
    # Edits starting after the use cannot touch it; of those before, any reaching into it does.
    last = bisect.bisect_right(starts, end)
    return any(edit_end >= start for _, edit_end in spans[:last])


def _reported_name(name: str) -> str:
    """``tf.flags.FLAGS.lr`` reads a flag the script defines itself: the API used is FLAGS."""
    cut = name.find(".FLAGS.")
    return name[: cut + len(".FLAGS")] if cut != -1 else name


def _lookup_name(name: str) -> str:
    """Keras Horovod shares the support list's ``hvd.*`` rows."""
    return "hvd." + name[len("hvd.keras.") :] if name.startswith("hvd.keras.") else name
