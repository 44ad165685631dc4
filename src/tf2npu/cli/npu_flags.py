"""Shorthand flags for common ``NpuOptimizer`` options, shared by ``graph inspect`` and ``run``.

Each flag is one ``--option KEY=VALUE`` written shorter, as ``tf2npu migrate`` spells them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from tf2npu.config.options import PRECISION_MODES
from tf2npu.config.sources import parse_text
from tf2npu.errors import UsageError

SHORTHANDS = (
    ("precision_mode", "precision_mode", "--precision-mode"),
    ("mix_compile", "mix_compile_mode", "--mix-compile"),
    ("fusion_switch_file", "fusion_switch_file", "--fusion-switch-file"),
    ("modify_mixlist", "modify_mixlist", "--modify-mixlist"),
)
"""``args`` attribute, ``parameter_map`` key, flag."""

_HELP: dict[str, dict[str, Any]] = {
    "--precision-mode": {
        "metavar": "MODE",
        "help": "precision_mode=MODE; one of " + ", ".join(PRECISION_MODES),
    },
    "--mix-compile": {
        "action": "store_true",
        "help": "mix_compile_mode=true: unsupported ops stay on the host",
    },
    "--fusion-switch-file": {"metavar": "FILE", "help": "fusion_switch_file=FILE"},
    "--modify-mixlist": {"metavar": "FILE", "help": "modify_mixlist=FILE"},
}


def add_option_flag(group: argparse._ActionsContainer, applies_to: str, note: str = "") -> None:
    """Add ``--option KEY=VALUE`` (repeatable) to ``group``: the one declaration every command
    that starts NPU sessions uses. ``applies_to`` says which sessions it sets ("every NPU
    session", "the migrated runs"); ``note`` adds what is particular to the command."""
    group.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"an NpuOptimizer parameter_map option for {applies_to}; it wins over the script's "
        "own setting; repeat for several (docs/options.md lists them)"
        + (f"; {note}" if note else ""),
    )


def add_shorthands(group: argparse._ArgumentGroup, flags: Sequence[str] = tuple(_HELP)) -> None:
    """Add the shorthand ``flags`` (all four by default) to ``group``."""
    for flag in flags:
        group.add_argument(flag, **_HELP[flag])


def cli_items(args: argparse.Namespace) -> list[str]:
    """``--option`` items followed by the shorthand flags; a flag contradicting one is an error."""
    items: list[str] = list(args.option)
    given = {item.partition("=")[0]: item for item in items}
    for attr, key, flag in SHORTHANDS:
        value = getattr(args, attr, None)
        if value is None or value is False:
            continue
        text = "true" if value is True else str(value)
        earlier = given.get(key)
        if earlier is not None and parse_text(key, earlier.partition("=")[2]) != parse_text(
            key, text
        ):
            shown = flag if value is True else f"{flag} {text}"
            raise UsageError(f"{shown} contradicts --option {earlier}; give {key} once")
        items.append(f"{key}={text}")
    return items
