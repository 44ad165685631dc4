"""Engine overrides for trial runs: fusion instances switched off, nodes kept in float32.

A bisection (``tf2npu bisect``) runs a script many times, each run with a few fusion instances
off or a few nodes kept in float32. Those choices reach the engine as two small JSON files named
by environment variables, so every subprocess of a trial inherits them, and never by editing
the user's own ``fusion_switch_file`` or ``modify_mixlist``:

* ``TF2NPU_FUSION_INSTANCES=FILE`` (``tf2npu run --fusion-instances FILE``)::

      {"off": [{"rule": "layer_norm"}, {"rule": "matmul_biasadd", "root": "dense/BiasAdd"}]}

  An entry without ``root`` turns the whole rule off; with ``root`` only the instance whose
  root is that client node (see :func:`tf2npu.graph.passes.fusion.instance_root`). It applies on
  top of ``fusion_switch_file``: a rule that file turns off stays off.
* ``TF2NPU_KEEP_FP32=FILE`` (``tf2npu run --keep-fp32 FILE``): ``{"nodes": ["loss/Sum"]}``;
  these client nodes stay float32 under every ``precision_mode``, as under
  ``keep_dtype_scope``.

Both files are validated once, into frozen values; a rule name that does not exist is an error
with the closest names. A root or node that no graph holds is not an error (a trial's graph may
differ from the one the list was made from); the run summary lists it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tf2npu.config.env import FUSION_INSTANCES_ENV, KEEP_FP32_ENV
from tf2npu.config.faults import FaultSpec
from tf2npu.config.jsonfile import load_json, short_repr
from tf2npu.config.names import KnownRules, alias_index, unknown
from tf2npu.errors import ConfigError

__all__ = [
    "FUSION_INSTANCES_ENV",
    "KEEP_FP32_ENV",
    "EngineOverrides",
    "FusionOverride",
    "KeepFp32",
]


_FUSION_SHAPE = '{"off": [{"rule": "<rule>"}, {"rule": "<rule>", "root": "<node name>"}]}'
_KEEP_SHAPE = '{"nodes": ["<node name>", ...]}'


@dataclass(frozen=True, slots=True)
class FusionOverride:
    """Fusion rules and single instances (rule, root) a trial turns off."""

    rules_off: frozenset[str] = frozenset()
    instances_off: frozenset[tuple[str, str]] = frozenset()
    source: str = ""
    """Where the override came from (shown in diagnostics and the run summary)."""

    @classmethod
    def load(cls, path: str | Path, known_rules: KnownRules, option: str) -> FusionOverride:
        """Read and validate the instance file ``path`` given to ``option``."""
        source = f"{option} file {str(path)!r}"
        return cls.from_json(load_json(path, option), known_rules, source)

    @classmethod
    def from_json(cls, data: object, known_rules: KnownRules, source: str) -> FusionOverride:
        """Validate decoded JSON (see the module docstring for the shape)."""
        if not isinstance(data, dict) or set(data) != {"off"} or not isinstance(data["off"], list):
            raise ConfigError(f"{source}: expected {_FUSION_SHAPE}, got {short_repr(data)}")
        aliases = alias_index(known_rules)
        rules: set[str] = set()
        instances: set[tuple[str, str]] = set()
        for position, entry in enumerate(data["off"]):
            rule, root = _entry(source, position, entry)
            if rule not in aliases:
                raise _unknown_rule(source, rule, known_rules)
            if root is None:
                rules.add(aliases[rule])
            else:
                instances.add((aliases[rule], root))
        return cls(frozenset(rules), frozenset(instances), source)

    def allows(self, rule: str, root: str) -> bool:
        """Whether the instance of ``rule`` (canonical name) rooted at ``root`` may apply."""
        return rule not in self.rules_off and (rule, root) not in self.instances_off

    def __bool__(self) -> bool:
        return bool(self.rules_off or self.instances_off)


def _entry(source: str, position: int, entry: object) -> tuple[str, str | None]:
    where = f"{source}: off[{position}]"
    if not isinstance(entry, dict) or "rule" not in entry or set(entry) - {"rule", "root"}:
        raise ConfigError(
            f'{where} = {short_repr(entry)} is not valid; give {{"rule": "<rule>"}} or '
            f'{{"rule": "<rule>", "root": "<node name>"}}'
        )
    rule, root = entry["rule"], entry.get("root")
    if not isinstance(rule, str) or not rule:
        raise ConfigError(f"{where}: rule = {rule!r} must be a rule name such as 'layer_norm'")
    if root is not None and (not isinstance(root, str) or not root):
        raise ConfigError(
            f"{where}: root = {root!r} must be a node name (the root of one instance, as "
            "fusion_instances.json or tf2npu graph inspect --json list it), or left out to "
            "turn the whole rule off"
        )
    return rule, root


def _unknown_rule(source: str, rule: str, known_rules: KnownRules) -> ConfigError:
    error = unknown("fusion rule", rule, known_rules, "docs/fusion.md")
    error.args = (f"{source}: {error.args[0]}",)
    return error


@dataclass(frozen=True, slots=True)
class KeepFp32:
    """Client nodes that stay float32 whatever ``precision_mode`` asks."""

    nodes: frozenset[str] = frozenset()
    source: str = ""

    @classmethod
    def load(cls, path: str | Path, option: str) -> KeepFp32:
        """Read and validate the node file ``path`` given to ``option``."""
        source = f"{option} file {str(path)!r}"
        return cls.from_json(load_json(path, option), source)

    @classmethod
    def from_json(cls, data: object, source: str) -> KeepFp32:
        """Validate decoded JSON: ``{"nodes": [names]}``."""
        if (
            not isinstance(data, dict)
            or set(data) != {"nodes"}
            or not isinstance(data["nodes"], list)
        ):
            raise ConfigError(f"{source}: expected {_KEEP_SHAPE}, got {short_repr(data)}")
        for position, name in enumerate(data["nodes"]):
            if not isinstance(name, str) or not name:
                raise ConfigError(
                    f"{source}: nodes[{position}] = {name!r} is not a node name; give the "
                    'client node names as strings, e.g. "loss/Sum"'
                )
        return cls(frozenset(data["nodes"]), source)

    def __bool__(self) -> bool:
        return bool(self.nodes)


@dataclass(frozen=True, slots=True)
class EngineOverrides:
    """What a trial run changes in the engine, besides the session's own options."""

    fusion: FusionOverride = field(default_factory=FusionOverride)
    keep_fp32: KeepFp32 = field(default_factory=KeepFp32)
    faults: tuple[FaultSpec, ...] = ()
    """Faults to inject (:mod:`tf2npu.config.faults`); empty unless a drill asks."""

    def __bool__(self) -> bool:
        return bool(self.fusion or self.keep_fp32 or self.faults)
