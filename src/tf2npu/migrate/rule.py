"""Migration rules: one class per rewrite, registered by name.

A rule's ``name`` is its file name, registry key, report label and test file name. Its docstring
says what it does; ``examples`` holds literal before/after pairs that the tests run and that
``docs/migration.md`` shows (a test keeps the two in step).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import ClassVar

from tf2npu.migrate.context import FileContext


@dataclass(frozen=True, slots=True)
class Example:
    """A literal input and the exact output the rule must produce for it."""

    before: str
    after: str
    title: str = ""


class Rule(abc.ABC):
    """Base class. Subclasses set ``name`` and ``examples`` and implement :meth:`apply`."""

    name: ClassVar[str] = ""
    examples: ClassVar[tuple[Example, ...]] = ()

    @abc.abstractmethod
    def apply(self, ctx: FileContext) -> None:
        """Inspect ``ctx`` and record patches and findings."""

    @classmethod
    def summary(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.split("\n\n", 1)[0].replace("\n", " ")


REGISTRY: dict[str, type[Rule]] = {}


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator adding a rule to :data:`REGISTRY` under its ``name``."""
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} has no name")
    if cls.name in REGISTRY:
        raise TypeError(f"rule name {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls
    return cls
