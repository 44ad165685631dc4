"""Text edits on a source file: replacements and insertions by character offset.

Rules never produce new source files; they produce :class:`Edit` values. The engine groups them in
:class:`Patch` es (one logical change, one report line), drops a patch that overlaps one accepted
before it, and applies the rest in one pass, so every character outside an edit is kept.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace ``text[start:end]`` by ``new`` (an insertion when ``start == end``)."""

    start: int
    end: int
    new: str

    def overlaps(self, other: Edit) -> bool:
        """True when the two edits touch the same characters (insertions at a boundary do not)."""
        if self.start == self.end or other.start == other.end:
            # An insertion conflicts only with a replacement strictly around its point.
            point, span = (self, other) if self.start == self.end else (other, self)
            return span.start < point.start < span.end
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True, slots=True)
class Patch:
    """One logical change made by one rule: the edits, and the span it reports as before/after."""

    rule: str
    edits: tuple[Edit, ...]
    subject: tuple[int, int]
    """The span shown as ``before`` in the change list (its text after editing is ``after``)."""
    line: int
    col: int

    def conflicts(self, other: Patch) -> bool:
        return any(a.overlaps(b) for a in self.edits for b in other.edits)


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits; insertions at one point keep the order they were given in."""
    ordered = sorted(enumerate(edits), key=lambda p: (p[1].start, p[1].end, p[0]))
    out: list[str] = []
    pos = 0
    for _, edit in ordered:
        if edit.start < pos:
            raise ValueError(f"overlapping edit at offset {edit.start}")
        out.append(text[pos : edit.start])
        out.append(edit.new)
        pos = edit.end
    out.append(text[pos:])
    return "".join(out)


def subject_after(text: str, patch: Patch) -> str:
    """The subject span's text after this patch's own edits."""
    start, end = patch.subject
    inner = [
        Edit(e.start - start, e.end - start, e.new)
        for e in patch.edits
        if start <= e.start and e.end <= end
    ]
    return apply_edits(text[start:end], inner)


def accept(patches: Sequence[Patch]) -> tuple[list[Patch], list[tuple[Patch, Patch]]]:
    """Keep patches in order, dropping each one that conflicts with one kept before it.

    Returns the kept patches and ``(dropped, kept_conflicting)`` pairs for reporting. Runs in
    O(n log n): kept replacements are disjoint intervals, so each edit checks one neighbour.
    """
    occupied = _Occupied()
    kept: list[Patch] = []
    dropped: list[tuple[Patch, Patch]] = []
    for patch in patches:
        clash = next((o for e in patch.edits if (o := occupied.owner_of_clash(e))), None)
        if clash is None:
            kept.append(patch)
            for edit in patch.edits:
                occupied.add(edit, patch)
        else:
            dropped.append((patch, clash))
    return kept, dropped


class _Occupied:
    """The text already claimed by kept patches: disjoint replacements and insertion points."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.spans: list[tuple[int, int, Patch]] = []
        self.points: list[int] = []
        self.point_owners: list[Patch] = []
        self.order: dict[Patch, int] = {}

    def owner_of_clash(self, edit: Edit) -> Patch | None:
        """The earliest kept patch ``edit`` overlaps, if any."""
        owners: list[Patch] = []
        # Kept replacements are disjoint, so those reaching into ``edit`` are the ones just
        # before its end, walking back while they still end after its start.
        limit = edit.end if edit.start < edit.end else edit.start
        i = bisect.bisect_left(self.starts, limit) - 1
        while i >= 0:
            start, end, owner = self.spans[i]
            if not Edit(start, end, "").overlaps(edit):
                break
            owners.append(owner)
            i -= 1
        if edit.start < edit.end:
            j = bisect.bisect_right(self.points, edit.start)
            while j < len(self.points) and self.points[j] < edit.end:
                owners.append(self.point_owners[j])
                j += 1
        return min(owners, key=self.order.__getitem__) if owners else None

    def add(self, edit: Edit, owner: Patch) -> None:
        self.order.setdefault(owner, len(self.order))
        if edit.start == edit.end:
            j = bisect.bisect_right(self.points, edit.start)
            self.points.insert(j, edit.start)
            self.point_owners.insert(j, owner)
        else:
            i = bisect.bisect_left(self.starts, edit.start)
            self.starts.insert(i, edit.start)
            self.spans.insert(i, (edit.start, edit.end, owner))
