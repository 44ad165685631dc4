"""Overflow records (``Opdebug``) as the device writes them: raw files (TF-free).

With ``enable_dump_debug`` the device writes one file per overflow event into the step folder of
the op that overflowed, ``Opdebug.Node_OpDebug.<task_id>.<stream_id>.<timestamp>`` (no
extension), beside the op's own raw dump file. It is a raw dump file like the others (the TLV
layout of :func:`tf2npu.artifacts.dump.write_nano`) with no input and one output: the record's
bytes. msaccucmp (``dump_parse/dump_data_parser.py``, ``_save_op_debug_to_file``) reads two
record layouts from that output:

* the *old* one, 2048 bytes (``OVERFLOW_CHECK_SIZE``), little-endian uint64 words: at byte 0 the
  ``DHA Atomic Add`` unit's info, at 128 the ``L2 Atomic Add`` unit's, at 256 the ``AI Core``'s
  (each ``model_id, stream_id, task_id, task_type, pc_start, para_base``); at 512 the DHA
  status, at 768 the L2 status, at 1024 the AI Core's ``kernel_code, block_idx, status``;
* the *new* one, starting with the uint32 magic ``0x5A5A5A5A``: ``magic, version``, then one
  accelerator entry ``valid, acc_type, rsv, data_len`` (uint32) and its uint64 fields (for AIC
  and AIV ``model_id, stream_id, task_id, task_type, context_id, thread_id, pc_start,
  para_base, core_id, block_id, status``; in version 1 ``status`` is four words).

:func:`decode_record` turns either into the JSON msaccucmp's ``convert`` writes for it (the old
one: ``{"DHA Atomic Add": {...}, "L2 Atomic Add": {...}, "AI Core": {...}}``), which
:mod:`tf2npu.debug.overflow.opdebug` reads. tf2npu writes the old layout, with the
``AI Core`` unit's
status (:func:`encode_old_record`).

What tf2npu knows beyond the device's fields (the user's ops, the line that created them, Inf or
saturation) goes to ``tf2npu_overflow.jsonl`` in the same folder, one JSON object per record,
keyed by the record's file name (:data:`SIDECAR`): a name neither msaccucmp's nor
precision_tool's file patterns match, so their tools never take it for a dump or a record.

>>> record = encode_old_record(UnitInfo(model_id=2, stream_id=0, task_id=7), status=0x20)
>>> len(record), decode_record(record)["AI Core"]["status"]
(2048, 32)
>>> raw_opdebug_name(7, 0, 1700000000000007)
'Opdebug.Node_OpDebug.7.0.1700000000000007'
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tf2npu.artifacts.dump import NANO_MAGIC, OPDEBUG_PREFIX, load_nano_tensor, write_nano
from tf2npu.fs import read_regular

__all__ = [
    "DEVICE_FIELDS",
    "OLD_RECORD_SIZE",
    "SIDECAR",
    "UnitInfo",
    "append_sidecar",
    "decode_record",
    "encode_old_record",
    "raw_opdebug_name",
    "read_raw_record",
    "read_sidecar",
    "write_raw_record",
]

OLD_RECORD_SIZE = 2048
"""msaccucmp's ``OVERFLOW_CHECK_SIZE``: 128 + 128 + 256 + 256 + 256 + 1024 bytes."""
_DHA_INFO, _L2_INFO, _AI_CORE_INFO = 0, 128, 256
_DHA_STATUS, _L2_STATUS, _AI_CORE_STATUS = 512, 768, 1024
_INFO = struct.Struct("<6Q")
"""model_id, stream_id, task_id, task_type, pc_start, para_base."""
_INFO_KEYS = ("model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base")
_HEX_KEYS = ("pc_start", "para_base", "src_addr", "dst_addr")
_U64 = struct.Struct("<Q")
_AI_CORE = struct.Struct("<3Q")
"""kernel_code, block_idx, status."""

_NEW_HEAD = struct.Struct("<II")
"""magic, version."""
_ACC_HEAD = struct.Struct("<IIII")
"""valid, acc_type, rsv, data_len."""
ACC_TYPES = {0: "AIC", 1: "AIV", 2: "AICPU", 3: "SDMA"}
_ACC_FIELDS = {
    "AIC": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
            "pc_start", "para_base", "core_id", "block_id", "status"),
    "SDMA": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
             "src_addr", "dst_addr", "channel_id", "status"),
    "AICPU": ("model_id", "stream_id", "task_id", "task_type", "context_id", "cpu_id",
              "thread_id", "status"),
}  # fmt: skip
_ACC_FIELDS["AIV"] = _ACC_FIELDS["AIC"]
_STATUS_WORDS = 4
"""AIC/AIV records of version 1 carry ``status`` as four uint64 words."""

DEVICE_FIELDS = ("status", "model_id", "stream_id", "task_id")
"""The fields of tf2npu's record that the raw record holds; the others go to the sidecar."""

SIDECAR = "tf2npu_overflow.jsonl"
"""tf2npu's facts about the records of one step folder, a JSON object per line."""


@dataclass(frozen=True, slots=True)
class UnitInfo:
    """The fields of one unit of an old-layout record."""

    model_id: int = 0
    stream_id: int = 0
    task_id: int = 0
    task_type: int = 0
    pc_start: int = 0
    para_base: int = 0


def raw_opdebug_name(task_id: int, stream_id: int, timestamp: int) -> str:
    """A raw record's file name, as the device names it."""
    return f"{OPDEBUG_PREFIX}{task_id}.{stream_id}.{timestamp}"


def encode_old_record(
    ai_core: UnitInfo,
    status: int,
    *,
    kernel_code: int = 0,
    block_idx: int = 0,
    dha: UnitInfo | None = None,
    dha_status: int = 0,
    l2: UnitInfo | None = None,
    l2_status: int = 0,
) -> bytes:
    """The 2048 bytes of an old-layout record (see the module docstring)."""
    data = bytearray(OLD_RECORD_SIZE)
    for offset, unit in ((_DHA_INFO, dha), (_L2_INFO, l2), (_AI_CORE_INFO, ai_core)):
        if unit is not None:
            _INFO.pack_into(data, offset, *(getattr(unit, key) for key in _INFO_KEYS))
    _U64.pack_into(data, _DHA_STATUS, dha_status)
    _U64.pack_into(data, _L2_STATUS, l2_status)
    _AI_CORE.pack_into(data, _AI_CORE_STATUS, kernel_code, block_idx, status)
    return bytes(data)


def decode_record(data: bytes, what: str = "Opdebug record") -> dict[str, Any]:
    """The JSON msaccucmp's ``convert`` writes for a record's bytes (old or new layout).

    Raises:
        ValueError: neither layout (the message names ``what``, the size and the layouts).
    """
    new = len(data) >= _NEW_HEAD.size + _ACC_HEAD.size
    if new and _NEW_HEAD.unpack_from(data)[0] == NANO_MAGIC:
        return _decode_new(data, what)
    if len(data) != OLD_RECORD_SIZE:
        raise ValueError(
            f"{what}: {len(data)} bytes of record, expected {OLD_RECORD_SIZE} (the old layout) "
            f"or a record starting with the magic {NANO_MAGIC:#x} (the new one)"
        )
    units: dict[str, dict[str, Any]] = {}
    for unit, offset in (
        ("DHA Atomic Add", _DHA_INFO),
        ("L2 Atomic Add", _L2_INFO),
        ("AI Core", _AI_CORE_INFO),
    ):
        values = dict(zip(_INFO_KEYS, _INFO.unpack_from(data, offset), strict=True))
        units[unit] = _hex(values)
    units["DHA Atomic Add"]["status"] = _U64.unpack_from(data, _DHA_STATUS)[0]
    units["L2 Atomic Add"]["status"] = _U64.unpack_from(data, _L2_STATUS)[0]
    kernel_code, block_idx, status = _AI_CORE.unpack_from(data, _AI_CORE_STATUS)
    units["AI Core"].update(kernel_code=hex(kernel_code), block_idx=block_idx, status=status)
    return {unit: units[unit] for unit in ("DHA Atomic Add", "L2 Atomic Add", "AI Core")}


def _hex(values: dict[str, Any]) -> dict[str, Any]:
    return {k: hex(v) if k in _HEX_KEYS else v for k, v in values.items()}


def _decode_new(data: bytes, what: str) -> dict[str, Any]:
    magic, version = _NEW_HEAD.unpack_from(data)
    valid, acc_code, rsv, data_len = _ACC_HEAD.unpack_from(data, _NEW_HEAD.size)
    acc_type = ACC_TYPES.get(acc_code)
    if acc_type is None:
        raise ValueError(f"{what}: acc_type {acc_code} is none of {ACC_TYPES}")
    start = _NEW_HEAD.size + _ACC_HEAD.size
    fields = _ACC_FIELDS[acc_type]
    words = len(fields) + (_STATUS_WORDS - 1 if version == 1 and acc_type in ("AIC", "AIV") else 0)
    if len(data) < start + 8 * words:
        raise ValueError(f"{what}: {len(data)} bytes, too short for its {acc_type} fields")
    values = struct.unpack_from(f"<{words}Q", data, start)
    detail = dict(zip(fields, values, strict=False))
    if words > len(fields):
        detail["status"] = list(values[len(fields) - 1 :])
    acc = {"valid": valid, "acc_type": acc_type, "rsv": rsv, "data_len": data_len}
    return {"magic": hex(magic), "version": version, "acc_list": {**acc, "data": _hex(detail)}}


def write_raw_record(path: str | Path, record: bytes) -> None:
    """Write a raw record file: a raw dump file whose only output is the record's bytes."""
    write_nano(path, [], [np.frombuffer(record, np.uint8)])


def read_raw_record(path: str | Path) -> dict[str, Any]:
    """The record in the raw file at ``path``, decoded (:func:`decode_record`).

    Raises:
        ValueError: not the TLV layout (a device's protobuf layout needs CANN), or no record.
        KeyError: the file holds no output.
        OSError: it cannot be read, or is no regular file.
    """
    array = load_nano_tensor(path, "output", 0)
    return decode_record(np.ascontiguousarray(array).tobytes(), str(path))


def append_sidecar(folder: Path, record_name: str, facts: Mapping[str, Any]) -> None:
    """Add tf2npu's facts about the record ``record_name`` to its folder's :data:`SIDECAR`."""
    line = json.dumps({"record": record_name, **facts}, separators=(",", ":"))
    with open(folder / SIDECAR, "a", encoding="utf-8") as stream:
        stream.write(line + "\n")


def read_sidecar(folder: Path) -> dict[str, dict[str, Any]]:
    """tf2npu's facts of the records in ``folder``, by record file name ({} when there is no
    sidecar; a line that is not a JSON object with a ``record`` name is skipped: the facts are
    extras, the record itself is what counts)."""
    try:  # read_regular: a FIFO or a device there never blocks the reader
        text = read_regular(folder / SIDECAR).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    facts: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(item, dict) and isinstance(item.get("record"), str):
            facts[item["record"]] = item
    return facts
