"""Reading option JSON files: encodings, nesting and non-regular files are clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tf2npu.config.jsonfile import load_json, parse_json
from tf2npu.errors import ConfigError


def test_utf8_file_loads(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"k": "é"}', encoding="utf-8")
    assert load_json(tmp_path / "a.json", "opt") == {"k": "é"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"k": 1}'.encode("utf-16"),
         "opt = 'f.json': the file is UTF-16 text (it starts with a UTF-16 byte-order mark); "
         "save it as UTF-8"),
        ('{"k": 1}'.encode("utf-32"),
         "opt = 'f.json': the file is UTF-32 text (it starts with a UTF-32 byte-order mark); "
         "save it as UTF-8"),
        (b'{"k": "\xe9"}',
         "opt = 'f.json': the file is not UTF-8 text (byte 7 is 0xe9); save it as UTF-8"),
        (b"[" * 50_000 + b"]" * 50_000,
         "opt file 'f.json': the JSON nests too deep (arrays or objects inside each other over "
         "~1000 levels); the file is not an options file, give the right path"),
    ],
)  # fmt: skip
def test_bad_files_are_config_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("f.json").write_bytes(data)
    with pytest.raises(ConfigError) as err:
        load_json("f.json", "opt")
    assert str(err.value) == message


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f.json")
    with pytest.raises(ConfigError, match=r"^opt = '.*f.json' is not a regular file; give the"):
        load_json(tmp_path / "f.json", "opt")


def test_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^opt = '.*' is a folder; give the path of a JSON"):
        load_json(tmp_path, "opt")


def test_deep_text_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^src: the JSON nests too deep"):
        parse_json('{"a": ' * 5000 + "1" + "}" * 5000, "src")
