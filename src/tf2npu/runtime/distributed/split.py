"""HCCL's gradient split strategy: which gradients share one fused all-reduce.

On the device, the gradients the distributed optimizers all-reduce (``fusion=1``) are not sent
one by one: HCCL cuts the list of gradients into segments and sends each segment as one
all-reduce. ``set_split_strategy_by_idx([20, 100, 159])`` cuts after gradient 20, 100 and 159
(gradients 0–20, 21–100, 101–159); ``set_split_strategy_by_size([60, 20, 20])`` cuts where 60%
and 80% of the gradient bytes are reached. When both are set, the split by size wins; when
neither is, the default is by size ``[96.54, 3.46]`` (the split Ascend documents as the default,
tuned on ResNet-50).

This module is the arithmetic only (no TensorFlow): :meth:`SplitStrategy.plan` turns the byte
sizes of the gradients, in the order the optimizer lists them, into the groups of positions
that travel together. A segment can only be sent as one tensor when its members share a dtype
and have a static size, so a segment splits further by dtype, and a gradient of unknown size
travels alone. Gradients past the last index of a split by index form one last segment.

Example:
    >>> SplitStrategy.by_size([50, 50]).plan([4, 4, 4, 4], ["f"] * 4)
    [(0, 1), (2, 3)]
    >>> SplitStrategy.by_index([0, 3]).plan([4, 4, 4, 4], ["f", "f", "h", "f"])
    [(0,), (1, 3), (2,)]
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["DEFAULT_SPLIT", "SplitStrategy"]

_SLACK = 1e-9  # percentages are given with two decimals; cumulative sums drift below that


@dataclass(frozen=True)
class SplitStrategy:
    """A gradient split strategy of one HCCL group."""

    by: Literal["size", "idx"]
    points: tuple[float, ...]
    """Percentages of the bytes (``size``, summing to 100) or the last gradient index of each
    segment (``idx``, increasing)."""
    origin: str
    """Who set it: ``set_split_strategy_by_size``, ``set_split_strategy_by_idx`` or default."""

    @classmethod
    def by_size(cls, percentages: Sequence[float], origin: str = "") -> SplitStrategy:
        return cls("size", tuple(float(p) for p in percentages), origin or "by_size")

    @classmethod
    def by_index(cls, indices: Sequence[int], origin: str = "") -> SplitStrategy:
        return cls("idx", tuple(float(i) for i in indices), origin or "by_idx")

    def describe(self) -> str:
        """E.g. ``by size [96.54, 3.46] (default)``."""
        values = ", ".join(f"{p:g}" for p in self.points)
        kind = "by size" if self.by == "size" else "by index"
        return f"{kind} [{values}] ({self.origin})"

    def segments(self, nbytes: Sequence[int]) -> list[range]:
        """The segments of positions ``0..len(nbytes)-1``, empty ones left out."""
        count = len(nbytes)
        if self.by == "idx":
            ends = [int(p) + 1 for p in self.points if int(p) + 1 < count] + [count]
        else:
            ends = self._size_ends(nbytes)
        found, start = [], 0
        for end in ends:
            if end > start:
                found.append(range(start, end))
                start = end
        return found

    def _size_ends(self, nbytes: Sequence[int]) -> list[int]:
        """The exclusive end of each segment: a gradient belongs to the first segment whose
        cumulative share of the bytes reaches the bytes up to and including it."""
        total = sum(nbytes)
        count = len(nbytes)
        if total <= 0:
            return [count]
        bounds, running = [], 0.0
        for share in self.points:
            running += share
            bounds.append(running)
        ends, seen, segment = [], 0, 0
        for position, size in enumerate(nbytes):
            seen += size
            while segment < len(bounds) - 1 and seen * 100.0 / total > bounds[segment] + _SLACK:
                ends.append(position)
                segment += 1
        return [*ends, count]

    def plan(
        self, nbytes: Sequence[int | None], kinds: Sequence[Hashable]
    ) -> list[tuple[int, ...]]:
        """Positions sent together, in order of their first member.

        Args:
            nbytes: each gradient's size in bytes, None when it is not static.
            kinds: what must be equal to share a tensor (the dtype), per gradient.
        """
        if len(nbytes) != len(kinds):
            raise ValueError(f"plan: {len(nbytes)} sizes but {len(kinds)} kinds")
        groups: list[tuple[int, ...]] = []
        for segment in self.segments([size or 0 for size in nbytes]):
            by_kind: dict[Hashable, list[int]] = {}
            for position in segment:
                if nbytes[position] is None:
                    groups.append((position,))
                else:
                    by_kind.setdefault(kinds[position], []).append(position)
            groups.extend(tuple(members) for members in by_kind.values())
        return sorted(groups)


DEFAULT_SPLIT = SplitStrategy.by_size([96.54, 3.46], "default")
"""HCCL's split when a group has none set."""
