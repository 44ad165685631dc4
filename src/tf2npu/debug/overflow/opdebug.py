"""Overflow records (``Opdebug.Node_OpDebug.*``): their names, formats and status codes.

With ``enable_dump_debug`` the device writes one raw ``Opdebug`` file per overflow event beside
the overflowing op's dump files (``tf2npu run`` writes the same, in the layout
:mod:`tf2npu.artifacts.opdebug` describes); msaccucmp's ``convert`` turns it into JSON. Both are
read here: a raw record is decoded into the JSON ``convert`` would write for it, with tf2npu's
facts from the folder's ``tf2npu_overflow.jsonl`` added. Three JSON shapes are read:

* the vendor's *old* converted format, one object per unit that can overflow::

      {"AI Core": {"status": 32, "task_id": 3, "stream_id": 0, ...},
       "DHA Atomic Add": {"status": 0, ...}, "L2 Atomic Add": {"status": 0, ...}}

  a unit overflowed when its ``status`` is above 0;
* tf2npu's record, the old format whose ``"AI Core"`` object also says which op of the user's
  graph overflowed (``op_name``, ``op_type``, ``origin``, ``created_at``, ``kind``, ``dtype``,
  ``model_id``, ``step``);
* the vendor's *new* format ``{"magic": ..., "version": ..., "acc_list": {"acc_type": "AIC",
  "data": {"status", "task_id", "stream_id", "context_id", "thread_id"}}}`` (``acc_list`` may
  also be a list of such objects; ``acc_type`` may be its number, 0 AIC, 1 AIV, 2 AICPU,
  3 SDMA; an id of 65535 means "not valid").

>>> name = parse_opdebug_name("Opdebug.Node_OpDebug.3.0.1700000000000123.output.0.json")
>>> (name.task_id, name.stream_id, name.timestamp)
(3, 0, 1700000000000123)
>>> ai_core_meanings(0x20 | 0x100)
('floating-point compute overflow', 'FP32 or INT32 to FP16 conversion overflow')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tf2npu.artifacts.dump import OPDEBUG_PREFIX
from tf2npu.artifacts.opdebug import read_raw_record, read_sidecar
from tf2npu.config.jsonfile import parse_json
from tf2npu.errors import ConfigError, UsageError
from tf2npu.fs import read_regular

__all__ = [
    "AI_CORE_STATUS_BITS",
    "OpdebugName",
    "OpdebugRecord",
    "StatusEntry",
    "ai_core_meanings",
    "decode",
    "is_raw_opdebug",
    "load_record",
    "parse_opdebug_name",
]

AI_CORE_STATUS_BITS: tuple[tuple[int, str], ...] = (
    (0x8, "sign overflow: the most negative signed integer was negated"),
    (0x10, "integer add/sub/mul/mac overflow"),
    (0x20, "floating-point compute overflow"),
    (0x80, "float to unsigned conversion of a negative value"),
    (0x100, "FP32 or INT32 to FP16 conversion overflow"),
    (0x400, "Cube accumulation overflow"),
)
"""AI Core ``status`` bits and what each means (precision_tool's ``AI_CORE_OVERFLOW_STATUS``)."""

DHA_ATOMIC_ADD_CODES = {
    0x9: "overflow",
    0xA: "underflow",
    0xB: "source is NaN",
    0xC: "destination is NaN",
    0xD: "source and destination are NaN",
}
"""``DHA Atomic Add`` status values (a code, not bits)."""

L2_ATOMIC_ADD_CODES = {
    1: "overflow",
    2: "underflow",
    3: "source is NaN",
    4: "destination is NaN",
    5: "source and destination are NaN",
}
"""``L2 Atomic Add`` codes, read from bits 16-18 of its status."""

OLD_UNITS = ("AI Core", "DHA Atomic Add", "L2 Atomic Add")
ACC_TYPES = {0: "AIC", 1: "AIV", 2: "AICPU", 3: "SDMA"}
INVALID_ID = 65535

_NAME = re.compile(
    re.escape(OPDEBUG_PREFIX)
    + r"(?P<task>[0-9]+)(?:\.(?P<stream>[0-9]{1,9}))?\.(?P<ts>[0-9]{10,})(?:\.[0-9]+)*"
    r"(?P<json>\.output\.0\.json)?$"
)


@dataclass(frozen=True, slots=True)
class OpdebugName:
    """What an ``Opdebug`` file name says: ``Opdebug.Node_OpDebug.<task>[.<stream>].<ts>...``.

    The oldest names have no stream id (None); newer ones append task type, context, thread and
    device ids after the timestamp (ignored here). The timestamp is the first field of 10 or more
    digits, which tells ``<task>.<ts>`` from ``<task>.<stream>.<ts>``.
    """

    task_id: int
    stream_id: int | None
    timestamp: int
    """Microseconds since the epoch: the tools order overflow events by it."""
    raw: bool = False
    """The device's raw file (no extension), not msaccucmp's converted ``.output.0.json``."""

    @property
    def key(self) -> tuple[int, int | None, int]:
        """What a raw record and its converted JSON have in common."""
        return (self.task_id, self.stream_id, self.timestamp)


def parse_opdebug_name(filename: str) -> OpdebugName | None:
    """``filename`` as an Opdebug record, raw or converted (``.output.0.json``), or None."""
    match = _NAME.match(filename)
    if match is None:
        return None
    stream = None if match["stream"] is None else int(match["stream"])
    return OpdebugName(int(match["task"]), stream, int(match["ts"]), match["json"] is None)


def is_raw_opdebug(filename: str) -> bool:
    """Whether ``filename`` is a device Opdebug file that msaccucmp has not converted yet."""
    match = _NAME.match(filename)
    return match is not None and match["json"] is None


@dataclass(frozen=True, slots=True)
class StatusEntry:
    """One unit's status in a record: ``AI Core``, ``DHA Atomic Add``, ``L2 Atomic Add`` (old
    format) or ``AIC``/``AIV``/``AICPU``/``SDMA`` (new format)."""

    unit: str
    status: int
    task_id: int | None
    """None when the record leaves it out or marks it not valid (65535)."""
    stream_id: int | None

    @property
    def overflowed(self) -> bool:
        return self.status > 0

    @property
    def meanings(self) -> tuple[str, ...]:
        """The status in words (empty when the unit did not overflow)."""
        return status_meanings(self.unit, self.status)


def ai_core_meanings(status: int) -> tuple[str, ...]:
    """The AI Core status bits set in ``status``, in words; unknown bits are named in hex."""
    meanings = [text for bit, text in AI_CORE_STATUS_BITS if status & bit]
    known = sum(bit for bit, _ in AI_CORE_STATUS_BITS)
    if status & ~known:
        meanings.append(f"unknown status bits {status & ~known:#x}")
    return tuple(meanings)


def status_meanings(unit: str, status: int) -> tuple[str, ...]:
    """``status`` of ``unit`` in words (see the module docstring for the units)."""
    if status <= 0:
        return ()
    if unit in ("AI Core", "AIC", "AIV"):
        return ai_core_meanings(status)
    if unit == "DHA Atomic Add":
        return (DHA_ATOMIC_ADD_CODES.get(status, f"unknown code {status:#x}"),)
    if unit == "L2 Atomic Add":
        code = (status >> 16) & 0x7
        return (L2_ATOMIC_ADD_CODES.get(code, f"unknown code {status:#x}"),)
    return (f"status {status:#x}",)


@dataclass(frozen=True, slots=True)
class OpdebugRecord:
    """One decoded overflow record. The fields after ``entries`` are tf2npu's own (empty or None
    in the vendor's records)."""

    path: Path
    name: OpdebugName
    format: Literal["old", "new"]
    entries: tuple[StatusEntry, ...]
    op_name: str = ""
    """The node in the engine's graph (not sanitized)."""
    op_type: str = ""
    origin: tuple[str, ...] = ()
    """The user's ops the node stands for."""
    created_at: str = ""
    """``file.py:LINE`` where the script created the user's op."""
    kind: str = ""
    """``saturation`` (|x| reached 65504) or ``inf_nan``."""
    dtype: str = ""
    model_id: int | None = None
    step: int | None = None

    @property
    def overflowed(self) -> tuple[StatusEntry, ...]:
        """The entries whose status says the unit overflowed."""
        return tuple(entry for entry in self.entries if entry.overflowed)

    @property
    def task_id(self) -> int:
        """The task id in the record, else the one in its file name (the vendor's rule)."""
        found = next((e.task_id for e in self.overflowed if e.task_id is not None), None)
        return self.name.task_id if found is None else found

    @property
    def stream_id(self) -> int | None:
        """The stream id in the record, else the one in its file name."""
        found = next((e.stream_id for e in self.overflowed if e.stream_id is not None), None)
        return self.name.stream_id if found is None else found


def load_record(path: Path, name: OpdebugName) -> OpdebugRecord:
    """Read and decode one record, raw or converted.

    Raises:
        UsageError: the file cannot be read, is not JSON (converted) or not a raw record in the
            TLV layout (raw), or is none of the three formats.
    """
    try:
        if name.raw:
            return decode(_raw_data(path), path, name)
        data = parse_json(read_regular(path).decode("utf-8"), f"overflow record {str(path)!r}")
    except OSError as exc:  # unreadable, not damaged: the record may name the first overflow
        raise _unreadable(path, exc) from None
    except (UnicodeDecodeError, ConfigError) as exc:
        raise UsageError(
            f"overflow record {str(path)!r} cannot be read as JSON ({exc}); convert the device "
            "file with `msaccucmp.py convert -d FILE -out DIR`, or remove the broken file"
        ) from None
    return decode(data, path, name)


def _unreadable(path: Path, exc: OSError) -> UsageError:
    why = exc.strerror or str(exc)
    return UsageError(
        f"overflow record {str(path)!r} cannot be read ({why}); make it a readable file "
        "(chmod a+r, or copy the record out of the FIFO/device it is), then run tf2npu "
        "overflow again: skipping it could name a later overflow as the first"
    )


def _raw_data(path: Path) -> dict[str, Any]:
    """A raw record as the JSON msaccucmp's ``convert`` writes, with tf2npu's facts about it
    (``tf2npu_overflow.jsonl`` beside it) under ``"AI Core"``; the device's fields win."""
    try:
        data = read_raw_record(path)
    except (ValueError, KeyError) as exc:
        raise UsageError(
            f"overflow record {str(path)!r} is not a raw Opdebug record tf2npu can read ({exc}); "
            "a device record in the protobuf layout needs CANN to parse: convert it with "
            "`msaccucmp.py convert -d FILE -out DIR` where CANN is installed and give DIR, or "
            "remove the broken file"
        ) from None
    facts = read_sidecar(path.parent).get(path.name)
    core = data.get("AI Core")
    if facts and isinstance(core, dict):
        data["AI Core"] = {**{k: v for k, v in facts.items() if k != "record"}, **core}
    return data


def decode(data: object, path: Path, name: OpdebugName) -> OpdebugRecord:
    """A record from its decoded JSON (old, tf2npu or new format).

    Raises:
        UsageError: ``data`` is none of the formats (the message names the file).
    """
    if isinstance(data, dict) and "acc_list" in data:
        return OpdebugRecord(path, name, "new", _new_entries(data["acc_list"], path))
    if isinstance(data, dict) and any(unit in data for unit in OLD_UNITS):
        entries = tuple(_entry(unit, data[unit], path) for unit in OLD_UNITS if unit in data)
        core = data.get("AI Core")
        return _with_tf2npu_fields(path, name, entries, core if isinstance(core, dict) else {})
    raise UsageError(
        f"overflow record {str(path)!r} is not an Opdebug record: expected a JSON object with "
        f'"AI Core" (old format) or "acc_list" (new format), got '
        f"{_describe(data)}; it may be a file of another tool; remove or move it"
    )


def _describe(data: object) -> str:
    if isinstance(data, dict):
        return "keys " + ", ".join(repr(k) for k in list(data)[:5]) if data else "{}"
    return f"a JSON {type(data).__name__}"


def _entry(unit: str, data: object, path: Path) -> StatusEntry:
    if not isinstance(data, dict) or not isinstance(data.get("status"), int):
        raise UsageError(
            f'overflow record {str(path)!r}: "{unit}" must be an object with an integer '
            f'"status", got {data!r}; the file is damaged or not an Opdebug record'
        )
    return StatusEntry(unit, data["status"], _id(data, "task_id"), _id(data, "stream_id"))


def _id(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    if not isinstance(value, int) or value < 0 or value == INVALID_ID:
        return None
    return value


def _new_entries(acc_list: object, path: Path) -> tuple[StatusEntry, ...]:
    items = acc_list if isinstance(acc_list, list) else [acc_list]
    entries = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("data"), dict):
            raise UsageError(
                f'overflow record {str(path)!r}: each "acc_list" entry must be an object with '
                f'"acc_type" and a "data" object, got {item!r}; the file is damaged'
            )
        acc_type = item.get("acc_type")
        unit = ACC_TYPES.get(acc_type, str(acc_type)) if isinstance(acc_type, int) else acc_type
        entries.append(_entry(str(unit), item["data"], path))
    return tuple(entries)


def _with_tf2npu_fields(
    path: Path, name: OpdebugName, entries: tuple[StatusEntry, ...], core: Mapping[str, Any]
) -> OpdebugRecord:
    origin = core.get("origin")
    return OpdebugRecord(
        path,
        name,
        "old",
        entries,
        op_name=_text(core.get("op_name")),
        op_type=_text(core.get("op_type")),
        origin=_names(origin),
        created_at=_text(core.get("created_at")),
        kind=_text(core.get("kind")),
        dtype=_text(core.get("dtype")),
        model_id=_id(core, "model_id"),
        step=_id(core, "step"),
    )


def _names(value: object) -> tuple[str, ...]:
    """``origin``: a list of op names (a single name is taken as a list of one)."""
    if isinstance(value, list):
        return tuple(str(name) for name in value if name)
    return (value,) if isinstance(value, str) and value else ()


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
