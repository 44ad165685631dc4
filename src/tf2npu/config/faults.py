"""Fault specs: which fused node or op a drill corrupts, and how.

``TF2NPU_INJECT_FAULT=SPEC[;SPEC...]`` or ``tf2npu run --inject-fault SPEC`` (repeatable)::

    SPEC = fusion:RULE[@ROOT]=KIND | op:NODE=KIND
    KIND = nan | bias:EPS | scale:F

``fusion:RULE`` corrupts the output of every fused node of that rule, ``fusion:RULE@ROOT`` only
the instance rooted at client node ``ROOT`` (as ``fusion_instances.json`` names it);
``op:NODE`` corrupts what the readers of client node ``NODE`` receive. ``nan`` replaces the
values by NaN, ``bias:EPS`` adds ``EPS``, ``scale:F`` multiplies by ``F``. The specs are parsed
here, once, into frozen values; the engine's ``inject_faults`` pass carries them out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from tf2npu.config.env import INJECT_FAULT_ENV
from tf2npu.config.names import closest
from tf2npu.errors import ConfigError

__all__ = ["INJECT_FAULT_ENV", "KINDS", "FaultSpec", "parse_fault", "parse_faults"]

KINDS = ("nan", "bias", "scale")
"""``nan``, ``bias:EPS``, ``scale:F``."""
_TARGETS = ("fusion", "op")
_GRAMMAR = "fusion:RULE[@ROOT]=KIND or op:NODE=KIND, KIND one of nan, bias:EPS, scale:F"
_EXAMPLE = "e.g. fusion:matmul_biasadd@dense/BiasAdd=scale:2 or op:dense/MatMul=nan"

KnownRules = Mapping[str, tuple[str, tuple[str, ...]]]


@dataclass(frozen=True, slots=True, eq=False)
class FaultSpec:
    """One parsed spec. ``target`` is ``fusion`` (``rule``, optional ``root``) or ``op``
    (``node``); ``kind`` one of :data:`KINDS`, with its ``value`` (NaN for ``nan``).

    Two specs are equal when every field is, a NaN ``value`` equal to a NaN (a spec read back
    from a ``run_spec.json`` equals the one written, although NaN != NaN).
    """

    text: str
    target: str
    kind: str
    value: float
    rule: str = ""
    root: str = ""
    node: str = ""

    def _key(self) -> tuple[object, ...]:
        value = None if math.isnan(self.value) else self.value
        return (self.text, self.target, self.kind, value, self.rule, self.root, self.node)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FaultSpec):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def parse_faults(
    texts: Iterable[str], known_rules: KnownRules, source: str
) -> tuple[FaultSpec, ...]:
    """Parse each spec (``;`` also separates specs inside one text)."""
    specs = [part.strip() for text in texts for part in text.split(";")]
    return tuple(parse_fault(text, known_rules, source) for text in specs if text)


def parse_fault(text: str, known_rules: KnownRules, source: str) -> FaultSpec:
    """Parse one spec; the error names the spec, the bad part and the fix."""

    def bad(part: str, fix: str) -> ConfigError:
        return ConfigError(f"{source} spec {text!r}: {part}; {fix}")

    target, colon, rest = text.partition(":")
    if not colon or target not in _TARGETS:
        raise bad(f"{target!r} is not a target", f"write {_GRAMMAR}, {_EXAMPLE}")
    name, equals, kind_text = rest.rpartition("=")
    if not equals or not name:
        raise bad("no =KIND", f"end the spec with =nan, =bias:EPS or =scale:F, {_EXAMPLE}")
    kind, value = _kind(kind_text, bad)
    if target == "op":
        return FaultSpec(text, target, kind, value, node=name)
    rule, at, root = name.partition("@")
    aliases = {alias: canon for canon, (_, names) in known_rules.items() for alias in names}
    rule = aliases.get(rule, rule)
    if rule not in known_rules:
        near = closest(rule, known_rules)
        hint = f"did you mean {near!r}? " if near else ""
        raise bad(f"unknown fusion rule {rule!r}", f"{hint}docs/fusion.md lists the rules")
    if at and not root:
        raise bad("empty ROOT after @", "name the root node, or drop @ to hit every instance")
    return FaultSpec(text, target, kind, value, rule=rule, root=root)


def _kind(text: str, bad: Callable[[str, str], ConfigError]) -> tuple[str, float]:
    kind, colon, number = text.partition(":")
    if kind == "nan" and not colon:
        return kind, math.nan
    if kind not in KINDS[1:] or not colon:
        raise bad(f"KIND {text!r} is not a kind", "use nan, bias:EPS or scale:F, e.g. bias:0.5")
    try:
        value = float(number)
    except ValueError:
        raise bad(
            f"{kind}:{number!r} needs a number", f"e.g. {kind}:{'0.01' if kind == 'bias' else '2'}"
        ) from None
    if not math.isfinite(value):
        raise bad(f"{kind}:{number} is not finite", "use nan for NaN values")
    return kind, value
