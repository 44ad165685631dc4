"""The ``modify_mixlist`` JSON file: edits of the mixed-precision op lists (seed 004).

Format: ``{"black-list": {"to-remove": [...], "to-add": [...]}, "white-list": {...}}``.
Semantics, as the vendor documents them:

* ``to-add`` moves an op type into that list, from whichever list it was in;
* ``to-remove`` takes an op type out of that list and it lands in the gray list (removing an op
  that is not in that list changes nothing);
* an op both removed from one list and added to another ends in the one it was added to
  (``black-list.to-add`` + ``white-list.to-remove`` = black).

``gray-list`` is accepted for ``to-add`` only (the vendor text defines no target for removing from
gray, since removed ops land in gray).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tf2npu.config.jsonfile import load_json, parse_json
from tf2npu.config.names import unknown
from tf2npu.config.precision import LIST_NAMES, PrecisionClass
from tf2npu.errors import ConfigError

_ACTIONS = ("to-add", "to-remove")


@dataclass(frozen=True, slots=True)
class Mixlist:
    """Parsed edits: ``added`` (op type -> class it moves into), ``removed`` (class, op type)."""

    added: tuple[tuple[str, PrecisionClass], ...] = ()
    removed: tuple[tuple[PrecisionClass, str], ...] = ()

    @classmethod
    def load(cls, path: str | Path) -> Mixlist:
        """Read and validate the file ``modify_mixlist`` points to."""
        return cls.from_json(load_json(path, "modify_mixlist"), f"modify_mixlist {str(path)!r}")

    @classmethod
    def parse(cls, text: str, source: str = "modify_mixlist") -> Mixlist:
        """Validate JSON text (same rules as :meth:`load`)."""
        return cls.from_json(parse_json(text, source), source)

    @classmethod
    def from_json(cls, data: object, source: str) -> Mixlist:
        """Validate decoded JSON."""
        if not isinstance(data, dict):
            raise ConfigError(
                f'{source}: expected a JSON object like {{"black-list": {{"to-add": ["Op"]}}}}, '
                f"got {type(data).__name__}"
            )
        added: dict[str, PrecisionClass] = {}
        removed: list[tuple[PrecisionClass, str]] = []
        for list_name, edits in data.items():
            if list_name not in LIST_NAMES:
                raise unknown("mixlist list", list_name, LIST_NAMES)
            target = LIST_NAMES[list_name]
            adds, removes = _edits(source, list_name, edits)
            both = sorted(set(adds) & set(removes))
            if both:
                raise ConfigError(
                    f"{source}: op {both[0]!r} is in both {list_name}.to-add and "
                    f"{list_name}.to-remove; keep it in one of them"
                )
            if removes and target is PrecisionClass.GRAY:
                raise ConfigError(
                    f"{source}: gray-list.to-remove {removes!r} has no meaning (ops removed "
                    "from a list land in gray); add them to black-list or white-list instead"
                )
            for op in adds:
                if op in added and added[op] is not target:
                    raise ConfigError(
                        f"{source}: op {op!r} is added to two lists ({_list_of(added[op])} "
                        f"and {list_name}); add it to one list only"
                    )
                added[op] = target
            removed.extend((target, op) for op in removes)
        return cls(tuple(added.items()), tuple(removed))

    def apply(self, base: Mapping[str, PrecisionClass]) -> dict[str, PrecisionClass]:
        """The op-type classes after the edits (``base`` is not changed)."""
        result = dict(base)
        for cls_, op in self.removed:
            if result.get(op) is cls_:
                result[op] = PrecisionClass.GRAY
        for op, target in self.added:
            result[op] = target
        return result


def _list_of(target: PrecisionClass) -> str:
    return next(name for name, cls_ in LIST_NAMES.items() if cls_ is target)


def _edits(source: str, list_name: str, edits: object) -> tuple[list[str], list[str]]:
    if not isinstance(edits, dict):
        raise ConfigError(
            f'{source}: {list_name} must be an object like {{"to-add": [...], "to-remove": '
            f"[...]}}, got {type(edits).__name__}"
        )
    for action in edits:
        if action not in _ACTIONS:
            raise unknown(f"{list_name} action", action, _ACTIONS)
    return (
        _ops(source, f"{list_name}.to-add", edits.get("to-add", [])),
        _ops(source, f"{list_name}.to-remove", edits.get("to-remove", [])),
    )


def _ops(source: str, where: str, ops: object) -> list[str]:
    if not isinstance(ops, list):
        raise ConfigError(
            f'{source}: {where} must be a list of op types, e.g. ["MatMul"], got {ops!r}'
        )
    for op in ops:
        if not isinstance(op, str) or not op:
            raise ConfigError(
                f'{source}: {where} holds {op!r}; op types are non-empty strings such as "MatMul"'
            )
    return list(dict.fromkeys(ops))
