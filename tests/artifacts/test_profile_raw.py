"""The raw profile files: written as the run goes, read back, found in a folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.debug.profile_sample import OPS, write_sample

from tf2npu.artifacts import profile_raw as raw


def test_raw_files_read_back_as_written(tmp_path: Path) -> None:
    record = raw.CompileRecord(1, 1, 1, ({"code": "x", "node": "mm"},))
    folder = write_sample(tmp_path, compiles=(record,))
    profile = raw.load(folder)
    assert profile.timestamp == "20240101120000"
    assert profile.ops[1] == {op.name: op for op in OPS}
    assert [(i.model, i.index, i.gap_ns) for i in profile.iterations] == [
        (2, 0, -1), (2, 1, 20_000), (2, 2, 20_000),
    ]  # fmt: skip
    assert profile.iterations[1].ops[1].output_shapes == ((4, 8),)
    assert profile.compiles == [record]
    assert profile.models[2].fetches == ("rs:0",)
    assert profile.facts_of(2)["mm"].geop == "GeOp1_0"


def test_a_last_line_cut_short_by_a_crash_is_skipped(tmp_path: Path) -> None:
    folder = write_sample(tmp_path)
    data = folder / "device_0" / "data" / raw.ITERATIONS
    data.write_text(data.read_text() + '{"model": 2, "ind', encoding="utf-8")
    assert len(raw.load(folder).iterations) == 3
    data.write_text('{"model": 2, "ind\n' + data.read_text(), encoding="utf-8")
    with pytest.raises(ValueError, match=r"iterations.jsonl:1: not a JSON line"):
        raw.load(folder)


def test_find_profiles_takes_a_prof_folder_or_the_folder_holding_them(tmp_path: Path) -> None:
    folder = write_sample(tmp_path)
    assert raw.find_profiles(folder) == [folder]
    assert raw.find_profiles(tmp_path) == [folder]
    with pytest.raises(ValueError, match=r"holds no profile .*tf2npu run --profile DIR"):
        raw.find_profiles(tmp_path / "empty")
    with pytest.raises(ValueError, match="not a profile folder"):
        raw.load(tmp_path)
