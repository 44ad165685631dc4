"""The profile folder layout as msprof writes it: folder name, table names, info.json, trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tf2npu.artifacts import profile as layout
from tf2npu.artifacts.profile_raw import RawWriter, find_profiles, load


def test_folder_name_is_msprofs_and_matches_msprof_analyzes_pattern() -> None:
    name = layout.folder_name(1234567, "20240101120000123", "ABCDEFGHIJKLMNOP")
    assert name == "PROF_234567_20240101120000123_ABCDEFGHIJKLMNOP"  # pid cut to 6 digits
    assert layout.FOLDER_PATTERN.match(name)
    assert layout.is_folder_name(name)
    assert layout.table_stamp(name) == "20240101120000"
    assert layout.table_name(layout.OP_SUMMARY, "20240101120000") == (
        "op_summary_20240101120000.csv"
    )


@pytest.mark.parametrize(
    ("started", "token", "named"),
    [("2024010112000", "AB", "'2024010112000'"), ("20240101120000123", "A-B", "'A-B'")],
)
def test_folder_name_refuses_what_msprof_analyze_would_not_find(
    started: str, token: str, named: str
) -> None:
    with pytest.raises(ValueError, match="17 digits") as error:
        layout.folder_name(1, started, token)
    assert named in str(error.value)


def test_old_names_still_read_and_others_are_not_profile_names() -> None:
    assert layout.is_folder_name("PROF_20240101120000")
    assert layout.is_folder_name("PROF_20240101120000_1")
    assert layout.table_stamp("PROF_20240101120000_1") == "20240101120000"
    assert not layout.is_folder_name("PROF_1")
    assert layout.table_stamp("profile") == ""


def test_info_json_holds_only_the_device_and_rank_ids() -> None:
    assert layout.info_json(3, 1) == {"devices": "3", "DeviceInfo": [{"id": 3}], "rank_id": 1}
    assert layout.info_json(0, None) == {"devices": "0", "DeviceInfo": [{"id": 0}]}


def test_the_writer_puts_info_json_where_msprof_does_and_the_reader_finds_the_folder(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "PROF_000042_20240101120000123_ABCD"
    writer = RawWriter(folder, 5, rank_id=2)
    writer.write_meta({"device_id": 5})
    writer.close()
    info = json.loads((folder / "device_5" / "info.json.5").read_text())
    assert info == {"devices": "5", "DeviceInfo": [{"id": 5}], "rank_id": 2}
    assert "ai_core_num" not in info  # never a made-up chip fact
    assert find_profiles(tmp_path) == [folder]
    loaded = load(folder)
    assert (loaded.device_id, loaded.timestamp) == (5, "20240101120000")
