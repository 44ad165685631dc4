"""Raw overflow records: the byte layout msaccucmp 26.2.0 decodes, and tf2npu's sidecar."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

from tf2npu.artifacts.dump import read_nano, write_nano
from tf2npu.artifacts.opdebug import (
    OLD_RECORD_SIZE,
    SIDECAR,
    UnitInfo,
    append_sidecar,
    decode_record,
    encode_old_record,
    raw_opdebug_name,
    read_raw_record,
    read_sidecar,
    write_raw_record,
)


def test_the_old_layout_word_by_word() -> None:
    data = encode_old_record(
        UnitInfo(model_id=2, stream_id=1, task_id=7, task_type=3, pc_start=0x10, para_base=0x20),
        status=0x120, kernel_code=0xAB, block_idx=5, l2_status=1 << 16,
    )  # fmt: skip
    assert len(data) == OLD_RECORD_SIZE == 2048
    assert struct.unpack_from("<6Q", data, 256) == (2, 1, 7, 3, 0x10, 0x20)  # AI Core info
    assert struct.unpack_from("<Q", data, 768) == (1 << 16,)  # L2 status
    assert struct.unpack_from("<3Q", data, 1024) == (0xAB, 5, 0x120)  # AI Core status
    assert data[:256] == bytes(256)  # the DHA and L2 units' info: not given, zero


def test_the_old_layout_decodes_as_msaccucmp_convert_writes_it() -> None:
    data = encode_old_record(UnitInfo(model_id=2, stream_id=0, task_id=7), status=32)
    assert decode_record(data) == {
        "DHA Atomic Add": {
            "model_id": 0, "stream_id": 0, "task_id": 0, "task_type": 0,
            "pc_start": "0x0", "para_base": "0x0", "status": 0,
        },
        "L2 Atomic Add": {
            "model_id": 0, "stream_id": 0, "task_id": 0, "task_type": 0,
            "pc_start": "0x0", "para_base": "0x0", "status": 0,
        },
        "AI Core": {
            "model_id": 2, "stream_id": 0, "task_id": 7, "task_type": 0,
            "pc_start": "0x0", "para_base": "0x0", "kernel_code": "0x0", "block_idx": 0,
            "status": 32,
        },
    }  # fmt: skip


def test_the_new_layout_of_version_1_has_four_status_words() -> None:
    words = (1, 0, 9, 0, 65535, 65535, 0x40, 0x80, 3, 4, 0x20, 0, 0, 0)
    data = struct.pack("<IIIIII", 0x5A5A5A5A, 1, 1, 0, 0, 112) + struct.pack("<14Q", *words)
    decoded = decode_record(data)
    assert decoded["magic"] == "0x5a5a5a5a"
    assert decoded["acc_list"]["acc_type"] == "AIC"
    assert decoded["acc_list"]["data"] == {
        "model_id": 1, "stream_id": 0, "task_id": 9, "task_type": 0, "context_id": 65535,
        "thread_id": 65535, "pc_start": "0x40", "para_base": "0x80", "core_id": 3,
        "block_id": 4, "status": [0x20, 0, 0, 0],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00" * 100, "rec: 100 bytes of record, expected 2048 (the old layout) or a record starting with the magic 0x5a5a5a5a (the new one)"),
        (struct.pack("<IIIIII", 0x5A5A5A5A, 0, 1, 7, 0, 0), "rec: acc_type 7 is none of {0: 'AIC', 1: 'AIV', 2: 'AICPU', 3: 'SDMA'}"),
        (struct.pack("<IIIIII", 0x5A5A5A5A, 0, 1, 0, 0, 0), "rec: 24 bytes, too short for its AIC fields"),
    ],
)  # fmt: skip
def test_bytes_of_no_layout_are_named(data: bytes, message: str) -> None:
    with pytest.raises(ValueError) as error:
        decode_record(data, "rec")
    assert str(error.value) == message


def test_a_raw_record_is_a_raw_dump_file_with_one_uint8_output(tmp_path: Path) -> None:
    path = tmp_path / raw_opdebug_name(7, 0, 1700000000000007)
    assert path.name == "Opdebug.Node_OpDebug.7.0.1700000000000007"
    write_raw_record(path, encode_old_record(UnitInfo(task_id=7), status=32))
    dump = read_nano(path)
    assert (len(dump.inputs), [(t.dtype, t.shape) for t in dump.outputs]) == (
        0, [("uint8", (2048,))],
    )  # fmt: skip
    assert read_raw_record(path)["AI Core"]["task_id"] == 7


def test_a_raw_file_without_an_output_or_of_no_layout(tmp_path: Path) -> None:
    empty = tmp_path / "Opdebug.Node_OpDebug.1.0.1700000000000001"
    write_nano(empty, [np.zeros(2, np.float32)], [])
    with pytest.raises(KeyError, match="output 0"):
        read_raw_record(empty)
    junk = tmp_path / "Opdebug.Node_OpDebug.2.0.1700000000000002"
    junk.write_bytes(b"\x00" * 7)
    with pytest.raises(ValueError, match="7 bytes, too short for a raw dump file"):
        read_raw_record(junk)


def test_the_sidecar_keys_facts_by_record_name_and_skips_damaged_lines(tmp_path: Path) -> None:
    append_sidecar(tmp_path, "Opdebug.Node_OpDebug.1.0.17", {"op_name": "a/b", "step": 0})
    (tmp_path / SIDECAR).open("a").write("{cut off\n[1]\n" + "[" * 100_000 + "\n")
    append_sidecar(tmp_path, "Opdebug.Node_OpDebug.2.0.18", {"origin": ["x"]})
    assert read_sidecar(tmp_path) == {
        "Opdebug.Node_OpDebug.1.0.17": {
            "record": "Opdebug.Node_OpDebug.1.0.17", "op_name": "a/b", "step": 0,
        },
        "Opdebug.Node_OpDebug.2.0.18": {"record": "Opdebug.Node_OpDebug.2.0.18", "origin": ["x"]},
    }  # fmt: skip


def test_no_sidecar_or_a_fifo_in_its_place_is_no_facts(tmp_path: Path) -> None:
    assert read_sidecar(tmp_path) == {}
    os.mkfifo(tmp_path / SIDECAR)
    assert read_sidecar(tmp_path) == {}  # never blocks
