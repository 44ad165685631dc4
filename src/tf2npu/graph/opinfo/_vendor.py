"""Reading a white list in the vendor's ``npu_supported_ops.json`` format and applying it."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path

from tf2npu.errors import ConfigError
from tf2npu.graph.opinfo._schema import OpInfo
from tf2npu.graph.opinfo.hostonly import host_only

_FLAGS = ("isGray", "isHeavy")
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXAMPLE = '{"MatMul": {"isGray": false, "isHeavy": false}}'


def read_white_list(path: Path) -> dict[str, tuple[bool, bool]]:
    """``{op type: (isGray, isHeavy)}`` from ``path``, validated entry by entry."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the op white list ({exc.strerror})") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(
            f"{path}: not valid JSON ({exc}); write an object like {_EXAMPLE}"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the top level is a {type(data).__name__}, expected an object of op types "
            f"like {_EXAMPLE}"
        )
    return {op: _entry(path, op, value) for op, value in data.items()}


def _entry(path: Path, op: str, value: object) -> tuple[bool, bool]:
    fix = f'write it as "{op}": {{"isGray": false, "isHeavy": false}}'
    if not _OP_NAME.fullmatch(op):
        raise ConfigError(f"{path}: entry {op!r}: not a TF op type name; {fix}")
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: entry {op!r}: the value is {value!r}, not an object; {fix}")
    unknown = sorted(set(value) - set(_FLAGS))
    if unknown:
        raise ConfigError(
            f"{path}: entry {op!r}: unknown key(s) {', '.join(unknown)}; valid keys are "
            f"isGray, isHeavy"
        )
    flags = tuple(value.get(key, False) for key in _FLAGS)
    for key, flag in zip(_FLAGS, flags, strict=True):
        if not isinstance(flag, bool):
            raise ConfigError(
                f"{path}: entry {op!r}: {key} is {flag!r}, expected true or false; {fix}"
            )
    return flags[0], flags[1]


def apply_white_list(
    ops: Mapping[str, OpInfo],
    white: Mapping[str, tuple[bool, bool]],
    *,
    source: str,
    replace: bool,
) -> dict[str, OpInfo]:
    """``ops`` with the device/gray/heavy columns taken from ``white``."""
    result: dict[str, OpInfo] = {}
    for op, info in ops.items():
        if op in white:
            continue
        result[op] = _unlisted(info, source) if replace and info.device_supported else info
    for op, (gray, heavy) in white.items():
        result[op] = _listed(ops.get(op), op, gray, heavy, source)
    return result


def _listed(info: OpInfo | None, op: str, gray: bool, heavy: bool, source: str) -> OpInfo:
    base = info if info is not None else OpInfo(op=op, device_supported=True)
    return dataclasses.replace(
        base,
        device_supported=True,
        gray=gray,
        heavy=heavy,
        host_only=host_only(op, listed=True, gray=gray),
        note=f"white list from {source}" if info is None else base.note,
    )


def _unlisted(info: OpInfo, source: str) -> OpInfo:
    return dataclasses.replace(
        info,
        device_supported=False,
        gray=False,
        heavy=False,
        host_only=host_only(info.op, listed=False, gray=False),
        note=f"not in the white list {source}",
    )
