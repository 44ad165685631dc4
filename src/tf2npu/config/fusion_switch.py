"""The ``fusion_switch_file``: turn fusion rules off or on, in the vendor's JSON format.

``{"Switch": {"GraphFusion": {"ALL": "off", "<rule>": "on"}, "UBFusion": {...}}}``. A single-rule
entry overrides ``ALL`` of its category; values are ``on``/``off`` in any case; a rule may be named
by our snake_case name or by one of its Ascend pass-name aliases. Rules not mentioned stay on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from tf2npu.config.jsonfile import load_json, parse_json
from tf2npu.config.names import unknown
from tf2npu.errors import ConfigError

CATEGORIES = ("GraphFusion", "UBFusion")

KnownRules = Mapping[str, tuple[str, tuple[str, ...]]]
"""Canonical rule name -> (category, Ascend pass-name aliases)."""


@dataclass(frozen=True, slots=True)
class FusionSwitch:
    """Which fusion rules are on; ``disabled`` holds canonical names."""

    states: Mapping[str, bool]
    disabled: frozenset[str]

    @classmethod
    def all_on(cls, known_rules: KnownRules) -> FusionSwitch:
        """No switch file: every rule is on."""
        return cls(MappingProxyType(dict.fromkeys(known_rules, True)), frozenset())

    @classmethod
    def load(cls, path: str | Path, known_rules: KnownRules) -> FusionSwitch:
        """Read and validate the file ``fusion_switch_file`` points to."""
        data = load_json(path, "fusion_switch_file")
        return cls.from_json(data, known_rules, f"fusion_switch_file {str(path)!r}")

    @classmethod
    def parse(
        cls, text: str, known_rules: KnownRules, source: str = "fusion_switch_file"
    ) -> FusionSwitch:
        """Validate JSON text (same rules as :meth:`load`)."""
        return cls.from_json(parse_json(text, source), known_rules, source)

    @classmethod
    def from_json(cls, data: object, known_rules: KnownRules, source: str) -> FusionSwitch:
        """Validate decoded JSON."""
        if (
            not isinstance(data, dict)
            or set(data) != {"Switch"}
            or not isinstance(data["Switch"], dict)
        ):
            raise ConfigError(
                f'{source}: expected {{"Switch": {{"GraphFusion": {{...}}, "UBFusion": {{...}}}}}}'
                f", got {_short(data)}"
            )
        aliases = _alias_index(known_rules)
        states = dict.fromkeys(known_rules, True)
        for category, entries in data["Switch"].items():
            if category not in CATEGORIES:
                raise unknown("fusion category name", category, CATEGORIES)
            _apply_category(source, category, entries, known_rules, aliases, states)
        disabled = frozenset(name for name, on in states.items() if not on)
        return cls(MappingProxyType(states), disabled)

    def enabled(self, rule_name: str) -> bool:
        """Whether the rule (canonical name) runs."""
        if rule_name not in self.states:
            raise unknown("fusion rule", rule_name, self.states)
        return self.states[rule_name]


def _apply_category(
    source: str,
    category: str,
    entries: object,
    known_rules: KnownRules,
    aliases: Mapping[str, str],
    states: dict[str, bool],
) -> None:
    if not isinstance(entries, dict):
        raise ConfigError(
            f'{source}: Switch.{category} must be an object like {{"ALL": "off"}}, '
            f"got {_short(entries)}"
        )
    if "ALL" in entries:
        on = _on_off(source, f"{category}.ALL", entries["ALL"])
        for name, (rule_category, _) in known_rules.items():
            if rule_category == category:
                states[name] = on
    given: dict[str, str] = {}
    for key, value in entries.items():
        if key == "ALL":
            continue
        if key not in aliases:
            raise unknown("fusion rule", key, aliases)
        name = aliases[key]
        rule_category = known_rules[name][0]
        if rule_category != category:
            raise ConfigError(
                f"{source}: rule {key!r} is listed under {category} but is a {rule_category} "
                f"rule; move it under {rule_category}"
            )
        on = _on_off(source, f"{category}.{key}", value)
        if name in given and states[name] != on:
            raise ConfigError(
                f"{source}: rule {name!r} is switched both on and off ({given[name]!r} and "
                f"{key!r}); keep one entry"
            )
        given[name] = key
        states[name] = on


def _on_off(source: str, where: str, value: object) -> bool:
    if isinstance(value, str) and value.lower() in ("on", "off"):
        return value.lower() == "on"
    raise ConfigError(f'{source}: {where} = {value!r} is not valid; use "on" or "off"')


def _alias_index(known_rules: KnownRules) -> dict[str, str]:
    index: dict[str, str] = {}
    for name, (_, aliases) in known_rules.items():
        index[name] = name
        for alias in aliases:
            index[alias] = name
    return index


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
