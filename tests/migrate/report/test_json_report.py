from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import PurePosixPath
from typing import Any

from tf2npu.migrate.model import MigrationReport
from tf2npu.migrate.report.json_report import render_json

TRAIN_CHANGES = [
    {
        "line": 1,
        "col": 1,
        "rule": "npu_import",
        "before": "",
        "after": "from npu_bridge.npu_init import *",
    },
    {
        "line": 12,
        "col": 8,
        "rule": "session_config",
        "before": "tf.Session()",
        "after": "tf.Session(config=npu_config_proto())",
    },
    {
        "line": 20,
        "col": 5,
        "rule": "dropout",
        "before": "tf.nn.dropout(x, rate=0.1)",
        "after": "npu_ops.dropout(x, keep_prob=1 - 0.1)",
    },
    {
        "line": 30,
        "col": 8,
        "rule": "session_config",
        "before": "tf.Session(config=cfg)",
        "after": "tf.Session(config=npu_config_proto(config_proto=cfg))",
    },
]
TRAIN_FINDINGS = [
    {
        "line": 7,
        "col": 1,
        "rule": "device_scope",
        "severity": "info",
        "message": "tf.device('/gpu:0') is pinned to the CPU",
        "fix": "",
    },
    {
        "line": 25,
        "col": 3,
        "rule": "hazards",
        "severity": "warning",
        "message": "tf.py_func runs on the host",
        "fix": "move it into the input pipeline",
    },
    {
        "line": 33,
        "col": 5,
        "rule": "distribute",
        "severity": "error",
        "message": 'MirroredStrategy has no NPU equivalent, "a|b"',
        "fix": "use NPUStrategy",
    },
]


def _use(
    line: int, col: int, module: str, api: str, status: str, advice: str = "", kind: str = "call"
) -> dict[str, Any]:
    return {
        "line": line,
        "col": col,
        "module": module,
        "api": api,
        "status": status,
        "advice": advice,
        "kind": kind,
    }


TRAIN_USES = [
    _use(5, 1, "tf.compat.v1", "tf.compat.v1.placeholder", "compat", "see tf.placeholder"),
    _use(6, 5, "tf", "tf.placeholder", "supported"),
    _use(8, 5, "tf", "tf.placeholder", "supported"),
    _use(12, 8, "tf", "tf.Session", "training_after_migration", "config=npu_config_proto()"),
    _use(20, 5, "tf.nn", "tf.nn.dropout", "migrated_by_tool", "npu_ops.dropout"),
    _use(25, 3, "tf", "tf.py_func", "unsupported", "不支持: 移到主机"),
    _use(30, 8, "tf", "tf.Session", "training_after_migration", "config=npu_config_proto()"),
    _use(33, 5, "tf.distribute", "tf.distribute.MirroredStrategy", "unsupported",
         "use NPUStrategy", "base"),
    _use(35, 1, "tf.contrib.layers", "tf.contrib.layers.xavier_initializer", "deprecated",
         "tf.glorot_uniform_initializer", "attribute"),
]  # fmt: skip

EXPECTED: dict[str, Any] = {
    "schema_version": 1,
    "tool": {"name": "tf2npu", "version": "0.1.0"},
    "source": "/data/model",
    "output": "/data/model_npu",
    "options": {
        "distributed": "auto",
        "entry": "src/train.py",
        "loss_scale": "none",
        "mix_compile": False,
        "precision_mode": None,
    },
    "seconds": 1.234,
    "totals": {
        "files": 4,
        "migrated": 1,
        "unchanged": 1,
        "copied": 1,
        "failed": 1,
        "changes": 4,
        "findings": {"error": 1, "warning": 2, "info": 1},
        "api_uses": 11,
    },
    "changes_by_rule": {"dropout": 1, "npu_import": 1, "session_config": 2},
    "api_status_counts": {
        "raw": {
            "analysing": 0,
            "compat": 1,
            "deprecated": 1,
            "host_python": 0,
            "manual": 0,
            "migrated_by_tool": 1,
            "not_listed": 1,
            "supported": 3,
            "training_after_migration": 2,
            "unsupported": 2,
            "unsupported_harmless": 0,
        },
        "distinct": {
            "analysing": 0,
            "compat": 1,
            "deprecated": 1,
            "host_python": 0,
            "manual": 0,
            "migrated_by_tool": 1,
            "not_listed": 1,
            "supported": 1,
            "training_after_migration": 1,
            "unsupported": 2,
            "unsupported_harmless": 0,
        },
    },
    "files": [
        {
            "path": "README.md",
            "status": "copied",
            "lines": 0,
            "reason": "",
            "changes": [],
            "findings": [],
            "api_uses": [],
        },
        {
            "path": "src/broken.py",
            "status": "failed",
            "lines": 0,
            "reason": "cannot parse: invalid syntax (line 3, col 5)",
            "changes": [],
            "findings": [],
            "api_uses": [],
        },
        {
            "path": "src/train.py",
            "status": "migrated",
            "lines": 40,
            "reason": "",
            "changes": TRAIN_CHANGES,
            "findings": TRAIN_FINDINGS,
            "api_uses": TRAIN_USES,
        },
        {
            "path": "src/utils.py",
            "status": "unchanged",
            "lines": 10,
            "reason": "",
            "changes": [],
            "findings": [
                {
                    "line": 2,
                    "col": 1,
                    "rule": "hazards",
                    "severity": "warning",
                    "message": "tf.flags is global state",
                    "fix": "",
                }
            ],
            "api_uses": [
                _use(3, 5, "tf", "tf.placeholder", "supported"),
                _use(4, 5, "tf.flags", "tf.flags.mystery", "not_listed"),
            ],
        },
    ],
}


def _keys(value: Any) -> Any:
    """The key order of every object in ``value``, recursively."""
    if isinstance(value, dict):
        return [(k, _keys(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_keys(v) for v in value]
    return None


def test_whole_document(report: MigrationReport) -> None:
    assert json.loads(render_json(report)) == EXPECTED


def test_key_order_is_the_schema_order(report: MigrationReport) -> None:
    assert _keys(json.loads(render_json(report))) == _keys(EXPECTED)


def test_text_form(report: MigrationReport) -> None:
    text = render_json(report)
    assert text.startswith('{\n  "schema_version": 1,\n  "tool": {\n    "name": "tf2npu",')
    assert text.endswith("\n}\n")
    assert '"advice": "不支持: 移到主机"' in text
    assert "\\u" not in text


def test_deterministic(report: MigrationReport) -> None:
    shuffled = dataclasses.replace(report, options=dict(reversed(list(report.options.items()))))
    assert render_json(report) == render_json(shuffled) == render_json(report)


def test_options_become_plain_values(report: MigrationReport) -> None:
    class Mode(enum.Enum):
        AUTO = "auto"

    options: dict[str, object] = {"mode": Mode.AUTO, "dir": PurePosixPath("a/b"), "ids": {2, 1}}
    data = json.loads(render_json(dataclasses.replace(report, options=options)))
    assert data["options"] == {"dir": "a/b", "ids": [1, 2], "mode": "auto"}


def test_empty_report() -> None:
    data = json.loads(render_json(MigrationReport("in", "out")))
    assert data["totals"] == {
        "files": 0,
        "migrated": 0,
        "unchanged": 0,
        "copied": 0,
        "failed": 0,
        "changes": 0,
        "findings": {"error": 0, "warning": 0, "info": 0},
        "api_uses": 0,
    }
    assert data["changes_by_rule"] == {}
    assert set(data["api_status_counts"]["raw"].values()) == {0}
    assert len(data["api_status_counts"]["distinct"]) == 11
    assert data["files"] == []


def test_each_record_is_one_line_under_its_file(report: MigrationReport) -> None:
    lines = render_json(report).splitlines()
    start = lines.index('      "changes": [')
    record = lines[start + 1]
    assert record.startswith('        {"line": ')
    assert record.endswith("},") or record.endswith("}")
    first = next(f["changes"][0] for f in EXPECTED["files"] if f["changes"])
    assert json.loads(record.strip().rstrip(",")) == first


def test_empty_containers_and_scalars_are_written_compact() -> None:
    text = render_json(MigrationReport("in", "out"))
    assert '\n  "files": []\n}\n' in text
    assert '\n  "changes_by_rule": {},\n' in text
