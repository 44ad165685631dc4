"""The ``fusion_switch_file``: turn fusion rules off or on, in the vendor's JSON format.

``{"Switch": {"GraphFusion": {"ALL": "off", "<rule>": "on"}, "UBFusion": {...}}}``. A single-rule
entry overrides ``ALL`` of its category; values are ``on``/``off`` in any case; a rule may be named
by our snake_case name or by one of its Ascend pass-name aliases. Rules not mentioned stay on.

A switch file is often shared with runs on real NPUs, so it names Ascend passes tf2npu does not
implement (``ConvToFullyConnectionFusionPass``, ``TbePool2dQuantFusionPass``,
``ConstToAttrReduceSumFusion``, ``AutomaticUbFusion``, the switch ``FusionVirtualOpSetSwitch``...).
Such a name (Ascend's spelling: CamelCase ending in ``Pass``, ``Fusion`` or ``Switch``, not close
to one of our names) is accepted, listed in :attr:`FusionSwitch.not_implemented` and logged
once: it has no effect here. Any other unknown name is an error with the closest known names, so
a typo never passes silently.
"""

from __future__ import annotations

import difflib
import functools
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from tf2npu.config.jsonfile import load_json, parse_json, short_repr
from tf2npu.config.names import KnownRules, alias_index, unknown
from tf2npu.config.overrides import FusionOverride
from tf2npu.errors import ConfigError

CATEGORIES = ("GraphFusion", "UBFusion")
_LOG = logging.getLogger("tf2npu.config")
_VENDOR_PASS = re.compile(r"^[A-Z][A-Za-z0-9]*(Pass|Fusion|Switch)$")
"""Ascend's pass names end in ``Pass`` (most), ``Fusion`` (``ConstToAttrReduceSumFusion``,
``AutomaticUbFusion``) or ``Switch`` (``FusionVirtualOpSetSwitch``)."""


@dataclass(frozen=True, slots=True)
class FusionSwitch:
    """Which fusion rules are on; ``disabled`` holds canonical names."""

    states: Mapping[str, bool]
    disabled: frozenset[str]
    not_implemented: tuple[str, ...] = ()
    """Ascend pass names the file switches that tf2npu has no rule for (no effect here)."""
    override: FusionOverride = field(default_factory=FusionOverride)
    """Rules and single instances a trial turns off on top of the file
    (``TF2NPU_FUSION_INSTANCES``); never written into the file."""

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
                f", got {short_repr(data)}"
            )
        aliases = alias_index(known_rules)
        states = dict.fromkeys(known_rules, True)
        foreign: list[str] = []
        for category, entries in data["Switch"].items():
            if category not in CATEGORIES:
                raise unknown("fusion category name", category, CATEGORIES)
            foreign += _apply_category(source, category, entries, known_rules, aliases, states)
        if foreign:
            _note_foreign(source, tuple(foreign))
        disabled = frozenset(name for name, on in states.items() if not on)
        return cls(MappingProxyType(states), disabled, tuple(foreign))

    def enabled(self, rule_name: str) -> bool:
        """Whether the rule (canonical name) runs."""
        if rule_name not in self.states:
            raise unknown("fusion rule", rule_name, self.states)
        return self.states[rule_name]

    def allows(self, rule_name: str, root: str) -> bool:
        """Whether the instance of the rule rooted at client node ``root`` applies: the file
        has the rule on and the override turns neither the rule nor this instance off."""
        return self.enabled(rule_name) and self.override.allows(rule_name, root)

    def with_override(self, override: FusionOverride) -> FusionSwitch:
        """This switch with ``override`` applied on top."""
        return replace(self, override=override)


def _apply_category(
    source: str,
    category: str,
    entries: object,
    known_rules: KnownRules,
    aliases: Mapping[str, str],
    states: dict[str, bool],
) -> list[str]:
    """Apply one category's entries; returns the Ascend pass names it has no rule for."""
    if not isinstance(entries, dict):
        raise ConfigError(
            f'{source}: Switch.{category} must be an object like {{"ALL": "off"}}, '
            f"got {short_repr(entries)}"
        )
    if "ALL" in entries:
        on = _on_off(source, f"{category}.ALL", entries["ALL"])
        for name, (rule_category, _) in known_rules.items():
            if rule_category == category:
                states[name] = on
    given: dict[str, str] = {}
    foreign: list[str] = []
    for key, value in entries.items():
        if key == "ALL":
            continue
        if key not in aliases:
            if _is_foreign_pass(key, aliases):
                _on_off(source, f"{category}.{key}", value)
                foreign.append(key)
                continue
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
    return foreign


@functools.cache
def _note_foreign(source: str, names: tuple[str, ...]) -> None:
    """Log the passes without effect once per file: every compile of a run reads it again."""
    _LOG.warning(
        "%s switches Ascend passes tf2npu does not implement: %s; they have no effect "
        "here (docs/fusion.md lists the rules tf2npu implements)",
        source,
        ", ".join(names),
    )


def _is_foreign_pass(key: str, aliases: Mapping[str, str]) -> bool:
    """An Ascend pass name (see :data:`_VENDOR_PASS`) that is not a misspelling of one we know."""
    if not _VENDOR_PASS.match(key):
        return False
    return not difflib.get_close_matches(key, list(aliases), n=1, cutoff=0.9)


def _on_off(source: str, where: str, value: object) -> bool:
    if isinstance(value, str) and value.lower() in ("on", "off"):
        return value.lower() == "on"
    raise ConfigError(f'{source}: {where} = {value!r} is not valid; use "on" or "off"')
