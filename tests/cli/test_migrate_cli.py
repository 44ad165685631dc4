"""``tf2npu migrate`` end to end through the console entry point."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tf2npu.cli.main import main

SESSION = "import tensorflow as tf\nsess = tf.Session()\n"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    return path


@pytest.fixture
def tree(tmp_path):
    src = tmp_path / "src"
    write(src / "train.py", SESSION)
    write(src / "pkg" / "util.py", "x = 1  # nothing to do\n")
    write(src / "data" / "config.yaml", "lr: 0.1\n")
    write(src / "py2.py", 'print "hello"\n')
    return src


def test_migrates_a_tree_and_writes_every_report(tree, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["migrate", str(tree), "-o", str(out)])
    assert code == 1  # py2.py failed to parse
    assert (out / "train.py").read_text() == (
        "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
        "sess = tf.Session(config=npu_config_proto())\n"
    )
    assert (out / "pkg" / "util.py").read_bytes() == (tree / "pkg" / "util.py").read_bytes()
    assert (out / "data" / "config.yaml").read_bytes() == b"lr: 0.1\n"
    assert (out / "py2.py").read_bytes() == b'print "hello"\n'
    report_dir = tmp_path / "out_report"
    names = sorted(p.name for p in report_dir.iterdir())
    assert names == ["api_analysis.csv", "api_analysis.xlsx", "changes.csv", "findings.csv",
                     "report.json", "summary.md"]  # fmt: skip
    data = json.loads((report_dir / "report.json").read_text())
    statuses = {f["path"]: f["status"] for f in data["files"]}
    assert statuses == {"data/config.yaml": "copied", "pkg/util.py": "unchanged",
                        "py2.py": "failed", "train.py": "migrated"}  # fmt: skip
    failed = next(f for f in data["files"] if f["path"] == "py2.py")
    assert "syntax error at line 1" in failed["reason"] and "Python 2" in failed["reason"]
    assert (tree / "train.py").read_text() == SESSION  # SRC untouched


def test_exit_code_zero_when_nothing_fails(tmp_path):
    src = write(tmp_path / "a.py", SESSION)
    assert main(["migrate", str(src)]) == 0
    assert (tmp_path / "a_npu.py").exists()
    assert (tmp_path / "a_npu_report" / "summary.md").exists()


def test_second_run_on_output_changes_nothing(tree, tmp_path):
    out, again = tmp_path / "out", tmp_path / "again"
    main(["migrate", str(tree), "-o", str(out)])
    main(["migrate", str(out), "-o", str(again), "--report", str(tmp_path / "r2")])
    for path in out.rglob("*"):
        if path.is_file():
            assert (again / path.relative_to(out)).read_bytes() == path.read_bytes()
    data = json.loads((tmp_path / "r2" / "report.json").read_text())
    assert data["totals"]["changes"] == 0


def test_in_place_with_backup(tmp_path):
    src = write(tmp_path / "p" / "t.py", SESSION)
    assert main(["migrate", str(tmp_path / "p"), "--in-place", "--backup"]) == 0
    assert "npu_config_proto" in src.read_text()
    assert (tmp_path / "p" / "t.py.bak").read_text() == SESSION


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{src}", "-o", "{src}/inner"], "is inside SRC"),
        (["{src}", "-o", "{src}"], "use --in-place"),
        (["{src}", "--backup"], "--backup only applies with --in-place"),
        (["{src}", "--in-place", "-o", "{tmp}/x"], "drop -o/--output"),
        (["{tmp}/missing"], "does not exist"),
        (["{src}", "-o", "{tmp}/o", "--format", "pdf"], "unknown report format 'pdf'"),
        (["{src}", "-o", "{tmp}/o", "--loss-scale", "fixed:0.5"], "must be a number >= 1"),
        (["{src}", "-o", "{tmp}/o", "--jobs", "0"], "--jobs 0"),
        (["{src}", "-o", "{tmp}/o", "--entry", "nope.py"], "--entry 'nope.py'"),
    ],
)
def test_usage_errors_name_the_value_and_the_fix(tree, tmp_path, capsys, args, message):
    argv = ["migrate"] + [a.format(src=tree, tmp=tmp_path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_non_empty_output_needs_force(tree, tmp_path, capsys):
    out = write(tmp_path / "o" / "keep.txt", "x").parent
    assert main(["migrate", str(tree), "-o", str(out)]) == 2
    assert "use --force" in capsys.readouterr().err
    assert main(["migrate", str(tree), "-o", str(out), "--force"]) == 1
    assert (out / "keep.txt").exists() and (out / "train.py").exists()


def test_diff_is_printed_and_saved(tmp_path, capsys):
    src = write(tmp_path / "a.py", SESSION)
    main(["migrate", str(src), "--diff"])
    out = capsys.readouterr().out
    assert "+sess = tf.Session(config=npu_config_proto())" in out
    assert (tmp_path / "a_npu_report" / "changes.diff").read_text() == out


def test_parallel_jobs_give_the_same_result(tree, tmp_path):
    main(["migrate", str(tree), "-o", str(tmp_path / "a"), "--report", str(tmp_path / "ra")])
    main(["migrate", str(tree), "-o", str(tmp_path / "b"), "--report", str(tmp_path / "rb"),
          "-j", "2"])  # fmt: skip
    a = json.loads((tmp_path / "ra" / "report.json").read_text())
    b = json.loads((tmp_path / "rb" / "report.json").read_text())
    a.pop("seconds"), b.pop("seconds")
    a.pop("output"), b.pop("output")
    assert a == b


def test_console_script_help_teaches(tmp_path):
    exe = Path(sys.executable).parent / "tf2npu"
    done = subprocess.run([str(exe), "migrate", "--help"], capture_output=True, text=True,
                          check=True, env={**os.environ, "COLUMNS": "100"})  # fmt: skip
    assert "examples:" in done.stdout and "--precision-mode" in done.stdout
    assert "exit codes" in done.stdout
