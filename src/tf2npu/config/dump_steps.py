"""``dump_step``: which training steps a dump covers, parsed and checked as the adapter does.

The adapter matches ``dump_step + "|"`` against ``((\\d{1,}-\\d{1,}\\||\\d{1,}\\|)+)``, then allows
at most 100 items and requires ``N < M`` in a range ``N-M``. Each failure has its own adapter
message; ours quotes it and then says what to write instead. ``''`` means every step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tf2npu.config.checks import adapter_says
from tf2npu.errors import ConfigError

MAX_SETS = 100
"""The adapter refuses more than this many ``|``-separated items."""

_SYNTAX = re.compile(r"(([0-9]+-[0-9]+\||[0-9]+\|)+)")
_SYNTAX_MESSAGE = "dump_step string style is error, correct example:'0|5|10|50-100'"
_COUNT_MESSAGE = "dump_step only support dump <= 100 sets of data"
_RANGE_MESSAGE = "in range steps, the first step is >= second step, correct example:'0|5|10-20'"


@dataclass(frozen=True, slots=True)
class DumpSteps:
    """The steps a ``dump_step`` value selects: inclusive ``(first, last)`` ranges.

    No ranges (``dump_step=''``) means every step.

    >>> steps = DumpSteps.parse("0|5|10-12")
    >>> [step for step in range(15) if steps.includes(step)]
    [0, 5, 10, 11, 12]
    >>> DumpSteps.parse("").includes(123)
    True
    """

    ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, text: str) -> DumpSteps:
        """The steps ``text`` names.

        Raises:
            ConfigError: ``text`` breaks one of the adapter's three rules; the message quotes
                the adapter's own message and gives the fix.
        """
        fix = check(text)
        if fix is not None:
            raise ConfigError(f"option 'dump_step' = {text!r} is not valid; {fix}")
        return cls(tuple(_bounds(item) for item in text.split("|")) if text else ())

    @property
    def every_step(self) -> bool:
        """Whether no step is left out (``dump_step`` was empty)."""
        return not self.ranges

    def includes(self, step: int) -> bool:
        """Whether step number ``step`` (0 = the first) is dumped."""
        return self.every_step or any(first <= step <= last for first, last in self.ranges)


def check(value: object) -> str | None:
    """`N` or `N-M` joined by `|` (at most 100, increasing), e.g. `0|5|10-20`

    ``None`` when ``value`` is a valid ``dump_step``, else the adapter's message and our fix.
    """
    if not isinstance(value, str):
        return 'give a string of steps, e.g. "0|5|10-20"'
    if value == "":
        return None
    if _SYNTAX.fullmatch(value + "|") is None:
        return adapter_says(
            _SYNTAX_MESSAGE,
            'give step numbers N or ranges N-M joined by "|", without spaces, e.g. "0|5|10-20"',
        )
    items = value.split("|")
    if len(items) > MAX_SETS:
        return adapter_says(
            _COUNT_MESSAGE,
            f"give at most {MAX_SETS} items (there are {len(items)}); merge neighbouring steps "
            'into ranges, e.g. "10-20" for 10|11|...|20',
        )
    for item in items:
        first, last = _bounds(item)
        if first >= last and "-" in item:
            return adapter_says(
                _RANGE_MESSAGE,
                f"in {item!r} the first step must be smaller than the second; "
                f"write {f'{last}-{first}' if first > last else str(first)!r} instead",
            )
    return None


def _bounds(item: str) -> tuple[int, int]:
    first, _, last = item.partition("-")
    return int(first), int(last or first)
