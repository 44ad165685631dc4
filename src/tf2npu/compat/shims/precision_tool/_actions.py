"""precision_tool's ``action`` strings, and what each asks of the NPU session.

``action`` is tested by substring, so ``'dump|fusion_off'``, ``'fusion_off dump'`` and
``'dump | fusion_off'`` all mean the same. Of the tokens, ``overflow`` wins over ``dump`` and
``fusion_off`` over ``fusion_switch``; ``prof`` is independent. ``action=None`` reads the
``PRECISION_TOOL_DUMP`` / ``PRECISION_TOOL_OVERFLOW`` environment variables (``True`` turns
the collection on) and switches no fusion and no profiling. TF-free: the settings are plain
values; :mod:`.tf_config` writes them into the protos.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tf2npu.compat.shims.precision_tool import _config as cfg
from tf2npu.errors import UsageError

TOKENS = ("overflow", "dump", "fusion_off", "fusion_switch", "prof")
"""The substrings precision_tool looks for, in the order of :class:`Action`'s fields."""

Value = str | bool | int


@dataclass(frozen=True)
class Action:
    """What one ``action`` switches on, after the priority rules.

    ``messages`` are the real tool's ``[PrecisionTool]`` lines (a collection switched on from
    the environment), printed on stdout as it prints them; ``notes`` are ours, for stderr: words
    that are no token, tokens a stronger one overrides.
    """

    overflow: bool = False
    dump: bool = False
    fusion_off: bool = False
    fusion_switch: bool = False
    prof: bool = False
    messages: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, action: object, env: Mapping[str, str]) -> Action:
        """Read ``action`` (a string, or ``None`` for the environment variables).

        Raises:
            UsageError: ``action`` is neither a string nor ``None``.
        """
        if action is None:
            return cls._from_env(env)
        if not isinstance(action, str):
            raise UsageError(
                f"precision_tool action={action!r} ({type(action).__name__}) is not a string; "
                "give the actions in one string, e.g. action='dump|fusion_off'"
            )
        found = {token: token in action for token in TOKENS}
        notes = [*_unknown_words(action), *_overridden(action, found)]
        return cls(
            overflow=found["overflow"],
            dump=found["dump"] and not found["overflow"],
            fusion_off=found["fusion_off"],
            fusion_switch=found["fusion_switch"] and not found["fusion_off"],
            prof=found["prof"],
            notes=tuple(notes),
        )

    @classmethod
    def _from_env(cls, env: Mapping[str, str]) -> Action:
        # The real tool tests overflow first and only then dump, so only one message prints.
        if env.get(cfg.OVERFLOW_ENV_FLAG) == "True":
            return cls(overflow=True, messages=("[PrecisionTool] enable npu overflow >======",))
        if env.get(cfg.DUMP_ENV_FLAG) == "True":
            return cls(dump=True, messages=("[PrecisionTool] enable npu dump >======",))
        return cls()


def _unknown_words(action: str) -> list[str]:
    """A word holding no token (``fusion-off``) is ignored silently by the real tool: say so."""
    words = re.findall(r"[A-Za-z0-9_-]+", action)
    return [
        f"tf2npu: precision_tool action {action!r}: {word!r} is no action and is ignored, as "
        f"precision_tool ignores it; the actions are {', '.join(TOKENS)}"
        for word in words
        if not any(token in word for token in TOKENS)
    ]


def _overridden(action: str, found: Mapping[str, bool]) -> list[str]:
    notes = []
    for strong, weak in (("overflow", "dump"), ("fusion_off", "fusion_switch")):
        if found[strong] and found[weak]:
            notes.append(
                f"tf2npu: precision_tool action {action!r}: {strong} wins over {weak}, "
                f"which is not applied (as in precision_tool)"
            )
    return notes


def custom_op_settings(action: Action) -> dict[str, Value]:
    """``update_custom_op``'s ``parameter_map`` settings, in the order it writes them.

    A ``str`` goes to the ``.s`` field, a ``bool`` to ``.b``, an ``int`` to ``.i``.
    """
    settings: dict[str, Value] = {"debug_dir": cfg.DEFAULT_OP_DEBUG_DIR}
    if action.overflow:
        settings.update(
            enable_dump_debug=True,
            dump_debug_mode="all",
            dump_path=cfg.OVERFLOW_DUMP_DIR,
            op_debug_level=cfg.OP_DEBUG_LEVEL,
        )
    elif action.dump:
        settings.update(
            enable_dump=True,
            dump_mode="all",
            dump_path=cfg.NPU_DUMP_DIR,
            op_debug_level=cfg.OP_DEBUG_LEVEL,
            dump_step=cfg.TF_DUMP_STEP,
        )
    switch_file = fusion_switch_file(action)
    if switch_file is not None:
        settings["fusion_switch_file"] = switch_file
    if action.prof:
        settings.update(profiling_mode=True, profiling_options=json.dumps(cfg.PROFILING_OPTIONS))
    return settings


def fusion_switch_file(action: Action) -> str | None:
    """The switch file ``action`` selects, as an absolute path, or ``None``."""
    if action.fusion_off:
        return cfg.FUSION_OFF_FILE
    if action.fusion_switch:
        return cfg.FUSION_SWITCH_FILE
    return None


def dump_config_args(action: Action) -> dict[str, Value]:
    """``estimator_dump_config``'s ``DumpConfig`` arguments (no fusion, no ``op_debug_level``)."""
    if action.overflow:
        return {"enable_dump_debug": True, "dump_path": cfg.OVERFLOW_DUMP_DIR, "dump_mode": "all"}
    if action.dump:
        return {
            "enable_dump": True,
            "dump_path": cfg.NPU_DUMP_DIR,
            "dump_step": cfg.TF_DUMP_STEP,
            "dump_mode": "all",
        }
    return {}


def estimator_notes(action: Action) -> tuple[str, ...]:
    """``estimator_dump_config`` applies dump/overflow only; the other tokens need NPURunConfig."""
    fixes = {
        "fusion_off": "NPURunConfig(fusion_switch_file=npu_tf_config.FUSION_OFF_FILE)",
        "fusion_switch": "NPURunConfig(fusion_switch_file=npu_tf_config.FUSION_SWITCH_FILE)",
        "prof": "NPURunConfig(profiling_config=ProfilingConfig(enable_profiling=True, ...))",
    }
    return tuple(
        f"tf2npu: precision_tool: estimator_dump_config ignores {token!r} (as precision_tool "
        f"does); pass {fix}"
        for token, fix in fixes.items()
        if getattr(action, token)
    )


def switch_file_note(path: str) -> str | None:
    """A note when the switch file switches nothing (the shipped ``fusion_switch.cfg``).

    Anything unreadable or malformed gives no note here: the session reports it, naming the file.
    """
    try:
        with open(path, encoding="utf-8") as stream:
            data = json.load(stream)
        categories = data["Switch"].values()
        empty = all(isinstance(entries, dict) and not entries for entries in categories)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not empty:
        return None
    return (
        f"tf2npu: precision_tool: {path} switches no fusion pass; it is part of the tf2npu "
        "install, so do not edit it: write your own switch file, e.g. fusion_switch.cfg holding "
        '{"Switch": {"GraphFusion": {"matmul_biasadd": "off"}, "UBFusion": {}}}, and set it '
        "instead of the 'fusion_switch' action: custom_op.parameter_map"
        '["fusion_switch_file"].s = tf.compat.as_bytes("fusion_switch.cfg"), '
        'NPURunConfig(fusion_switch_file="fusion_switch.cfg"), or tf2npu run '
        "--fusion-switch-file fusion_switch.cfg (the passes that fired are in "
        "run_summary.json under fusions)"
    )
