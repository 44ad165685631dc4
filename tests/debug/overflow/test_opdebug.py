"""Opdebug records: file names, the three JSON formats, status codes in words, broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tf2npu.artifacts.opdebug import UnitInfo, append_sidecar, encode_old_record, write_raw_record
from tf2npu.debug.overflow.opdebug import (
    OpdebugName,
    StatusEntry,
    ai_core_meanings,
    decode,
    is_raw_opdebug,
    load_record,
    parse_opdebug_name,
    status_meanings,
)
from tf2npu.errors import UsageError

NAME = OpdebugName(3, 0, 1700000000000123)
PATH = Path("dump/0/Opdebug.Node_OpDebug.3.0.1700000000000123.output.0.json")


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("Opdebug.Node_OpDebug.3.0.1700000000000123.output.0.json", OpdebugName(3, 0, 1700000000000123)),
        # the oldest names have no stream id
        ("Opdebug.Node_OpDebug.327.1619347786532995.output.0.json", OpdebugName(327, None, 1619347786532995)),
        # newer names append task type, context, thread and device ids
        ("Opdebug.Node_OpDebug.0.3.1673383728094391.4.1.0.0.output.0.json", OpdebugName(0, 3, 1673383728094391)),
        # the device's raw files, as tf2npu run writes them too
        ("Opdebug.Node_OpDebug.0.3.1673383728094391.4.1.0.0", OpdebugName(0, 3, 1673383728094391, raw=True)),
        ("Opdebug.Node_OpDebug.3.0.1700000000000123", OpdebugName(3, 0, 1700000000000123, raw=True)),
        ("Opdebug.Node_OpDebug.0.3.1673383728094391.output.0.npy", None),
        ("MatMul.dense_MatMul.3.0.1700000000000123.output.0.npy", None),
        ("ge_proto_00000001_Build.json", None),
    ],
)  # fmt: skip
def test_record_file_names(filename: str, expected: OpdebugName | None) -> None:
    assert parse_opdebug_name(filename) == expected


def test_raw_device_files_are_told_from_converted_ones() -> None:
    assert is_raw_opdebug("Opdebug.Node_OpDebug.0.3.1673383728094391.4.1.0.0")
    assert is_raw_opdebug("Opdebug.Node_OpDebug.0.3.1673383728094391")
    assert not is_raw_opdebug("Opdebug.Node_OpDebug.0.3.1673383728094391.output.0.json")
    assert not is_raw_opdebug("Add.add.0.3.1673383728094391")


@pytest.mark.parametrize(
    ("status", "meanings"),
    [
        (0, ()),
        (0x8, ("sign overflow: the most negative signed integer was negated",)),
        (0x10, ("integer add/sub/mul/mac overflow",)),
        (32, ("floating-point compute overflow",)),
        (0x80, ("float to unsigned conversion of a negative value",)),
        (0x100, ("FP32 or INT32 to FP16 conversion overflow",)),
        (0x400, ("Cube accumulation overflow",)),
        (0x20 | 0x400, ("floating-point compute overflow", "Cube accumulation overflow")),
        (0x20 | 0x1, ("floating-point compute overflow", "unknown status bits 0x1")),
    ],
)
def test_ai_core_status_bits(status: int, meanings: tuple[str, ...]) -> None:
    assert ai_core_meanings(status) == meanings
    assert status_meanings("AI Core", status) == meanings


@pytest.mark.parametrize(
    ("unit", "status", "meanings"),
    [
        ("DHA Atomic Add", 0x9, ("overflow",)),
        ("DHA Atomic Add", 0xA, ("underflow",)),
        ("DHA Atomic Add", 0xD, ("source and destination are NaN",)),
        ("DHA Atomic Add", 0x7, ("unknown code 0x7",)),
        ("L2 Atomic Add", 0b001 << 16, ("overflow",)),
        ("L2 Atomic Add", 0b011 << 16, ("source is NaN",)),
        ("L2 Atomic Add", (0b101 << 16) | 0xFF, ("source and destination are NaN",)),
        ("L2 Atomic Add", 0b111 << 16, ("unknown code 0x70000",)),
        ("AIC", 0x20, ("floating-point compute overflow",)),
        ("AIV", 0x10, ("integer add/sub/mul/mac overflow",)),
        ("AICPU", 0x3, ("status 0x3",)),
        ("SDMA", 0, ()),
    ],
)
def test_other_units(unit: str, status: int, meanings: tuple[str, ...]) -> None:
    assert status_meanings(unit, status) == meanings


def test_tf2npu_record_carries_the_users_op() -> None:
    data = {"AI Core": {
        "status": 32, "task_id": 3, "stream_id": 0, "model_id": 1, "step": 2,
        "op_name": "dense/MatMul", "op_type": "MatMul", "origin": ["dense/MatMul"],
        "created_at": "train.py:12", "kind": "saturation", "dtype": "DT_FLOAT16",
    }}  # fmt: skip
    record = decode(data, PATH, NAME)
    assert record.format == "old"
    assert record.entries == (StatusEntry("AI Core", 32, 3, 0),)
    assert (record.op_name, record.op_type, record.origin) == (
        "dense/MatMul",
        "MatMul",
        ("dense/MatMul",),
    )
    assert (record.created_at, record.kind, record.dtype) == (
        "train.py:12",
        "saturation",
        "DT_FLOAT16",
    )
    assert (record.model_id, record.step, record.task_id, record.stream_id) == (1, 2, 3, 0)


def test_vendor_old_format_overflowed_when_status_above_zero() -> None:
    data = {
        "AI Core": {"status": 0, "task_id": 7, "stream_id": 2},
        "DHA Atomic Add": {"status": 9, "task_id": 7, "stream_id": 2},
        "L2 Atomic Add": {"status": 0},
    }
    record = decode(data, PATH, NAME)
    assert [e.unit for e in record.entries] == ["AI Core", "DHA Atomic Add", "L2 Atomic Add"]
    assert [e.unit for e in record.overflowed] == ["DHA Atomic Add"]
    assert record.overflowed[0].meanings == ("overflow",)
    assert (record.task_id, record.stream_id) == (7, 2)  # the record's ids win over the name's
    assert (record.op_name, record.origin, record.created_at) == ("", (), "")


def test_ids_come_from_the_name_when_the_record_has_none() -> None:
    record = decode({"AI Core": {"status": 32}}, PATH, NAME)
    assert (record.task_id, record.stream_id) == (3, 0)


def test_task_id_zero_in_the_record_is_not_taken_for_missing() -> None:
    record = decode({"AI Core": {"status": 32, "task_id": 0, "stream_id": 0}}, PATH, NAME)
    assert record.task_id == 0


@pytest.mark.parametrize(
    "acc_list",
    [
        {"acc_type": "AIC", "data": {"status": 32, "task_id": 5, "stream_id": 1, "context_id": 65535, "thread_id": 65535}},
        {"acc_type": 0, "data": {"status": 32, "task_id": 5, "stream_id": 1}},
        [{"acc_type": 0, "data": {"status": 32, "task_id": 5, "stream_id": 1}}],
    ],
)  # fmt: skip
def test_vendor_new_format(acc_list: object) -> None:
    record = decode({"magic": 0x5A5A5A5A, "version": 1, "acc_list": acc_list}, PATH, NAME)
    assert record.format == "new"
    assert record.entries == (StatusEntry("AIC", 32, 5, 1),)
    assert record.overflowed[0].meanings == ("floating-point compute overflow",)


def test_invalid_ids_65535_fall_back_to_the_file_name() -> None:
    data = {
        "magic": 1,
        "acc_list": {"acc_type": 1, "data": {"status": 16, "task_id": 65535, "stream_id": 65535}},
    }
    record = decode(data, PATH, NAME)
    assert record.entries == (StatusEntry("AIV", 16, None, None),)
    assert (record.task_id, record.stream_id) == (3, 0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "is not an Opdebug record: expected a JSON object with \"AI Core\" (old format) or \"acc_list\" (new format), got a JSON list"),
        ({"graph": []}, "got keys 'graph'"),
        ({}, "got {}"),
        ({"AI Core": {"task_id": 1}}, '"AI Core" must be an object with an integer "status", got {\'task_id\': 1}'),
        ({"AI Core": 32}, '"AI Core" must be an object with an integer "status", got 32'),
        ({"acc_list": {"acc_type": "AIC"}}, 'each "acc_list" entry must be an object with "acc_type" and a "data" object'),
    ],
)  # fmt: skip
def test_not_a_record(data: object, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        decode(data, PATH, NAME)
    assert f"overflow record {str(PATH)!r}" in str(caught.value)
    assert message in str(caught.value)


def test_load_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "Opdebug.Node_OpDebug.3.0.1700000000000123.output.0.json"
    path.write_text(json.dumps({"AI Core": {"status": 32}}))
    assert load_record(path, NAME).entries == (StatusEntry("AI Core", 32, None, None),)


def test_load_names_a_file_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "Opdebug.Node_OpDebug.3.0.1700000000000123.output.0.json"
    path.write_bytes(b"\x08\x01binary")
    with pytest.raises(UsageError) as caught:
        load_record(path, NAME)
    assert str(caught.value).startswith(f"overflow record {str(path)!r} cannot be read as JSON (")
    assert "convert the device file with `msaccucmp.py convert -d FILE -out DIR`" in str(
        caught.value
    )


@pytest.mark.parametrize(
    ("origin", "expected"),
    [(["a/MatMul", "a/BiasAdd"], ("a/MatMul", "a/BiasAdd")), ("a/MatMul", ("a/MatMul",)), ("", ()), (None, ()), ([], ())],
)  # fmt: skip
def test_origin_is_a_list_of_names(origin: object, expected: tuple[str, ...]) -> None:
    record = decode({"AI Core": {"status": 32, "origin": origin}}, PATH, NAME)
    assert record.origin == expected


def test_a_raw_record_reads_with_the_sidecars_facts_and_the_devices_fields_win(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "Opdebug.Node_OpDebug.3.0.1700000000000123"
    write_raw_record(raw, encode_old_record(UnitInfo(model_id=2, task_id=3), status=0x100))
    append_sidecar(
        tmp_path, raw.name,
        {"op_name": "x_cast", "op_type": "Cast", "origin": ["x"], "created_at": "t.py:3",
         "kind": "saturation", "dtype": "DT_FLOAT16", "step": 4, "status": 0},
    )  # fmt: skip
    record = load_record(raw, parse_opdebug_name(raw.name))  # type: ignore[arg-type]
    assert (record.format, record.task_id, record.model_id, record.step) == ("old", 3, 2, 4)
    assert [(e.unit, e.status) for e in record.overflowed] == [("AI Core", 0x100)]
    assert (record.op_name, record.op_type, record.origin, record.created_at, record.kind) == (
        "x_cast", "Cast", ("x",), "t.py:3", "saturation",
    )  # fmt: skip
    (tmp_path / "tf2npu_overflow.jsonl").unlink()  # a device's record: the device fields only
    bare = load_record(raw, parse_opdebug_name(raw.name))  # type: ignore[arg-type]
    assert (bare.op_name, bare.model_id, bare.step, bare.overflowed[0].status) == ("", 2, None, 256)
