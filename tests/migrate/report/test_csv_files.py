from __future__ import annotations

import dataclasses
from pathlib import Path

from tf2npu.migrate.model import Change, FileResult, FileStatus, MigrationReport
from tf2npu.migrate.report.csv_files import write_csv

CHANGES = """\
file,line,col,rule,before,after
src/train.py,1,1,npu_import,,from npu_bridge.npu_init import *
src/train.py,12,8,session_config,tf.Session(),tf.Session(config=npu_config_proto())
src/train.py,20,5,dropout,"tf.nn.dropout(x, rate=0.1)","npu_ops.dropout(x, keep_prob=1 - 0.1)"
src/train.py,30,8,session_config,tf.Session(config=cfg),\
tf.Session(config=npu_config_proto(config_proto=cfg))
"""

FINDINGS = '''\
file,line,col,severity,rule,message,fix
src/train.py,7,1,info,device_scope,tf.device('/gpu:0') is pinned to the CPU,
src/train.py,25,3,warning,hazards,tf.py_func runs on the host,move it into the input pipeline
src/train.py,33,5,error,distribute,"MirroredStrategy has no NPU equivalent, ""a|b""",use NPUStrategy
src/utils.py,2,1,warning,hazards,tf.flags is global state,
'''

API_ANALYSIS = """\
index,file,line,module,api,status,advice
1,src/train.py,5,tf.compat.v1,tf.compat.v1.placeholder,compat,see tf.placeholder
2,src/train.py,6,tf,tf.placeholder,supported,
3,src/train.py,8,tf,tf.placeholder,supported,
4,src/train.py,12,tf,tf.Session,training_after_migration,config=npu_config_proto()
5,src/train.py,20,tf.nn,tf.nn.dropout,migrated_by_tool,npu_ops.dropout
6,src/train.py,25,tf,tf.py_func,unsupported,不支持: 移到主机
7,src/train.py,30,tf,tf.Session,training_after_migration,config=npu_config_proto()
8,src/train.py,33,tf.distribute,tf.distribute.MirroredStrategy,unsupported,use NPUStrategy
9,src/train.py,35,tf.contrib.layers,tf.contrib.layers.xavier_initializer,deprecated,\
tf.glorot_uniform_initializer
10,src/utils.py,3,tf,tf.placeholder,supported,
11,src/utils.py,4,tf.flags,tf.flags.mystery,not_listed,
"""


def test_writes_the_three_files_and_returns_their_paths(
    report: MigrationReport, tmp_path: Path
) -> None:
    written = write_csv(report, tmp_path)
    assert written == [
        tmp_path / "changes.csv",
        tmp_path / "findings.csv",
        tmp_path / "api_analysis.csv",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "api_analysis.csv",
        "changes.csv",
        "findings.csv",
    ]


def test_exact_text(report: MigrationReport, tmp_path: Path) -> None:
    write_csv(report, tmp_path)
    assert (tmp_path / "changes.csv").read_bytes() == CHANGES.encode("utf-8")
    assert (tmp_path / "findings.csv").read_bytes() == FINDINGS.encode("utf-8")
    assert (tmp_path / "api_analysis.csv").read_bytes() == API_ANALYSIS.encode("utf-8")


def test_plain_utf8_without_bom_and_lf_only(report: MigrationReport, tmp_path: Path) -> None:
    write_csv(report, tmp_path)
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert not data.startswith(b"\xef\xbb\xbf")
        assert b"\r" not in data


def test_multiline_text_is_quoted(tmp_path: Path) -> None:
    change = Change("a.py", 3, 1, "gelu", "def gelu(x):\n    return x", "def gelu(x):\r\n    pass")
    result = FileResult("a.py", FileStatus.MIGRATED, changes=(change,))
    write_csv(MigrationReport("in", "out", files=[result]), tmp_path)
    text = (tmp_path / "changes.csv").read_bytes().decode("utf-8")
    assert text == (
        "file,line,col,rule,before,after\n"
        'a.py,3,1,gelu,"def gelu(x):\n    return x","def gelu(x):\r\n    pass"\n'
    )


def test_empty_report_gives_header_rows_only(tmp_path: Path) -> None:
    write_csv(MigrationReport("in", "out"), tmp_path)
    assert (tmp_path / "changes.csv").read_text() == "file,line,col,rule,before,after\n"
    assert (tmp_path / "findings.csv").read_text() == "file,line,col,severity,rule,message,fix\n"
    assert (
        tmp_path / "api_analysis.csv"
    ).read_text() == "index,file,line,module,api,status,advice\n"


def test_index_runs_over_the_whole_report(report: MigrationReport, tmp_path: Path) -> None:
    report = dataclasses.replace(report, files=list(reversed(report.files)))
    write_csv(report, tmp_path)
    lines = (tmp_path / "api_analysis.csv").read_text(encoding="utf-8").splitlines()
    assert [line.split(",")[:3] for line in lines[1:4]] == [
        ["1", "src/utils.py", "3"],
        ["2", "src/utils.py", "4"],
        ["3", "src/train.py", "5"],
    ]
