"""Every user error of issue 9 ends with exit 2 and one message, before any work, never a traceback.

Root reads and writes through chmod 000, so "unreadable" and "unwritable" use what fails for
root too: a path under a regular file, ``/proc`` (no new files), ``/proc/self/mem`` (reading its
first byte is an I/O error), a FIFO and ``/dev/zero``.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import pytest

from tf2npu.cli.main import main

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="uses /proc, FIFOs, /dev/zero")

SWITCH = '{"Switch": {"GraphFusion": {"ALL": "off"}}}'
MIXLIST = '{"black-list": {"to-add": ["MatMul"]}}'
MIX = ["--precision-mode", "allow_mix_precision"]


def nested_functions(depth: int) -> bytes:
    """A binary GraphDef whose function f0 calls f1 ... calls f<depth-1> (an Identity)."""
    from tensorflow.core.framework import graph_pb2, types_pb2

    graph = graph_pb2.GraphDef()
    for i in range(depth):
        function = graph.library.function.add()
        function.signature.name = f"f{i}"
        function.signature.input_arg.add(name="x", type=types_pb2.DT_FLOAT)
        function.signature.output_arg.add(name="y", type=types_pb2.DT_FLOAT)
        node = function.node_def.add(name="c", input=["x"])
        last = i + 1 == depth
        node.op = "Identity" if last else f"f{i + 1}"
        if last:
            node.attr["T"].type = types_pb2.DT_FLOAT
        function.ret["y"] = "c:output:0" if last else "c:y:0"
    graph.node.add(name="x", op="Placeholder").attr["dtype"].type = types_pb2.DT_FLOAT
    graph.node.add(name="call", op="f0", input=["x"])
    return graph.SerializeToString()


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with every bad input, and a script that leaves ran.txt if it runs."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder\n")
    (tmp_path / "model.pbtxt").write_text('node { name: "x" op: "Placeholder" }\n')
    os.mkfifo(tmp_path / "fifo.pbtxt")
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "mem.py").symlink_to("/proc/self/mem")
    (tmp_path / "switch16.json").write_bytes(SWITCH.encode("utf-16"))
    (tmp_path / "mixlist16.json").write_bytes(MIXLIST.encode("utf-16"))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "train.py").write_text("open('ran.txt', 'w').close()\n")
    return tmp_path


CASES = {
    "html under a file": (
        ["graph", "inspect", "model.pbtxt", "--html", "afile/x.html"],
        "--html 'afile/x.html' cannot be written: 'afile' is a file, not a folder; give a path "
        "under a folder, e.g. partition.html",
    ),
    "html unwritable": (
        ["graph", "inspect", "model.pbtxt", "--html", "/proc/tf2npu.html"],
        "--html '/proc/tf2npu.html' cannot be written: its folder is not writable",
    ),
    "dump-dir under a file": (
        ["graph", "inspect", "model.pbtxt", "--dump-dir", "afile/dumps"],
        "--dump-dir 'afile/dumps' cannot be created: 'afile' is a file, not a folder",
    ),
    "dump-dir unwritable": (
        ["graph", "inspect", "model.pbtxt", "--dump-dir", "/proc/tf2npu-dumps"],
        "--dump-dir '/proc/tf2npu-dumps' is not writable (",
    ),
    "dump-dir empty": (
        ["graph", "inspect", "model.pbtxt", "--dump-dir", ""],
        "argument --dump-dir: an empty path; give a file or folder name",
    ),
    "graph /dev/zero": (
        ["graph", "inspect", "/dev/zero"],
        "GRAPH '/dev/zero' is a character device; give a .pb, .pbtxt or .meta file",
    ),
    "graph FIFO": (
        ["graph", "inspect", "fifo.pbtxt"],
        "GRAPH 'fifo.pbtxt' is a FIFO (named pipe); give a .pb, .pbtxt or .meta file",
    ),
    "switch file UTF-16": (
        ["graph", "inspect", "model.pbtxt", "--fusion-switch-file", "switch16.json"],
        "fusion_switch_file = 'switch16.json': the file is UTF-16 text (it starts with a UTF-16 "
        "byte-order mark); save it as UTF-8",
    ),
    "switch file 100k deep": (
        ["graph", "inspect", "model.pbtxt", "--fusion-switch-file", "deep.json"],
        "fusion_switch_file file 'deep.json': the JSON nests too deep",
    ),
    "mixlist UTF-16": (
        ["graph", "inspect", "model.pbtxt", *MIX, "--modify-mixlist", "mixlist16.json"],
        "modify_mixlist = 'mixlist16.json': the file is UTF-16 text",
    ),
    "mixlist 100k deep": (
        ["graph", "inspect", "model.pbtxt", *MIX, "--modify-mixlist", "deep.json"],
        "modify_mixlist file 'deep.json': the JSON nests too deep",
    ),
    "600 nested functions": (
        ["graph", "inspect", "nested.pb"],
        "graph file 'nested.pb': its functions call each other 600 levels deep (f0 -> f1 -> f2 "
        "-> ... -> f599); tf2npu graph inspect follows at most 200 levels",
    ),
    "graph given a script": (
        ["graph", "inspect", "train.py"],
        "graph file 'train.py': unknown suffix '.py'; expected .pb (binary GraphDef), .pbtxt "
        "(text GraphDef) or .meta (MetaGraphDef)",
    ),
    "run FIFO script": (
        ["run", "fifo.py"],
        "SCRIPT 'fifo.py' is a FIFO (named pipe); give the path of the Python training script",
    ),
    "run unreadable script": (
        ["run", "mem.py"],
        "SCRIPT 'mem.py' cannot be read (Input/output error); give the path of the Python",
    ),
    "run unwritable report-dir": (
        ["run", "--report-dir", "/proc/self", "train.py"],
        "--report-dir '/proc/self' is not writable (",
    ),
    "run empty report-dir": (
        ["run", "--report-dir", "", "train.py"],
        "argument --report-dir: an empty path",
    ),
    "run switch file nowhere": (
        ["run", "--option", "fusion_switch_file=nowhere.json", "train.py"],
        "fusion_switch_file = 'nowhere.json': cannot read the file (No such file or directory); "
        "give the path of an existing JSON file",
    ),
    "run iterations beyond int64": (
        ["run", "--option", f"iterations_per_loop={2**64}", "train.py"],
        f"--option iterations_per_loop={2**64} does not fit in a 64-bit integer (the largest is "
        "9223372036854775807); give a smaller number, e.g. iterations_per_loop=1",
    ),
    "run AOE_MODE=9": (
        ["run", "train.py"],
        "environment variable AOE_MODE='9' is not valid (it sets option 'aoe_mode'); use one "
        "of: '1', '2', '4'; or unset AOE_MODE",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_user_error_is_one_message_and_exit_2(
    case: str, inputs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, message = CASES[case]
    if case == "600 nested functions":
        (inputs / "nested.pb").write_bytes(nested_functions(600))
    monkeypatch.setenv("AOE_MODE", "9" if case == "run AOE_MODE=9" else "")
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    except BaseException:
        code = -1
        sys.stderr.write(traceback.format_exc())
    out, err = capsys.readouterr()
    assert "Traceback\n" not in out + err
    assert code == 2
    *usage, last = err.strip().splitlines()
    assert message in last  # one line, after argparse's usage lines if any
    assert all(line.startswith(("usage: ", " ")) for line in usage)
    assert not (inputs / "ran.txt").exists()  # the script never started
    assert sorted(p.name for p in inputs.iterdir() if p.is_dir()) == []  # no dump folder
