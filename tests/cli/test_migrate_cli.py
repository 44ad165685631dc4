"""``tf2npu migrate`` end to end through the console entry point."""

import errno
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


@pytest.mark.parametrize("existing", [False, True])
def test_a_file_given_an_output_folder_goes_into_it(tmp_path, existing):
    source = write(tmp_path / "train.py", "import tensorflow as tf\nprint(tf.__version__)\n")
    out = tmp_path / "npu"
    if existing:
        out.mkdir()
    assert main(["migrate", str(source), "-o", str(out) + ("" if existing else "/")]) == 0
    assert (out / "train.py").is_file()
    assert (out / "train.py").read_text() == source.read_text()


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


# -- user errors: exit 2 before any work, one message, never a traceback -------------------------
def snapshot(root: Path) -> dict[str, str]:
    """Every path below ``root`` and what it is (links not followed)."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            kind = "link" if path.is_symlink() else "dir" if path.is_dir() else "file"
            found[str(path.relative_to(root))] = kind
    return found


def refuse_writes_in(monkeypatch, folder: Path) -> None:
    """Root may write anywhere: make creating files and folders in ``folder`` fail."""
    real_open, real_mkdir = os.open, os.mkdir

    def deny(path) -> bool:
        return Path(os.path.abspath(path)).parent == folder

    def fake_open(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and deny(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    def fake_mkdir(path, *args, **kwargs):
        if deny(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)


def _stale(kind: str):
    def make(tree: Path, tmp: Path, monkeypatch) -> list[str]:
        out = tmp / "o"
        out.mkdir()
        if kind == "folder":
            (out / "train.py").mkdir()
        elif kind == "file":
            (out / "pkg").write_text("old")
        else:
            (tmp / "elsewhere").mkdir()
            os.symlink(tmp / "elsewhere", out / "pkg")
        return [str(tree), "-o", str(out), "--force"]

    return make


def _unwritable(where: str):
    def make(tree: Path, tmp: Path, monkeypatch) -> list[str]:
        out, report = tmp / "o", tmp / "r"
        out.mkdir()
        report.mkdir()
        refuse_writes_in(monkeypatch, {"out": out, "report": report, "src": tree}[where])
        if where == "src":
            return [str(tree), "--in-place"]
        return [str(tree), "-o", str(out), "--force", "--report", str(report)]

    return make


def _unlistable_out(tree: Path, tmp: Path, monkeypatch) -> list[str]:
    out = tmp / "o"
    out.mkdir()
    real = os.scandir

    def refuse(path="."):
        if Path(path) == out:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", refuse)
    return [str(tree), "-o", str(out)]


def _args(*args: str):
    def make(tree: Path, tmp: Path, monkeypatch) -> list[str]:
        return [a.format(src=tree, tmp=tmp) for a in args]

    return make


def _source(kind: str):
    def make(tree: Path, tmp: Path, monkeypatch) -> list[str]:
        src = tmp / "s"
        if kind == "dangling":
            os.symlink(tmp / "gone", src)
        elif kind == "loop":
            os.symlink(src, src)
        elif kind == "fifo":
            os.mkfifo(src)
        else:
            return ["/" if kind == "root" else "/dev/null", "-o", str(tmp / "o")]
        return [str(src), "-o", str(tmp / "o")]

    return make


def _report_is_a_file(tree: Path, tmp: Path, monkeypatch) -> list[str]:
    return [str(tree), "-o", str(tmp / "o"), "--report", str(write(tmp / "r.txt", "x"))]


# fmt: off
USER_ERRORS = {
    "report-is-a-file": (_report_is_a_file, "exists and is not a folder"),
    "unwritable-out": (_unwritable("out"), "OUT '{tmp}/o' is not writable (Permission denied)"),
    "unlistable-out": (_unlistable_out, "OUT '{tmp}/o' cannot be listed (Permission denied)"),
    "unwritable-report": (_unwritable("report"), "--report '{tmp}/r' is not writable"),
    "unwritable-src-in-place": (_unwritable("src"), "SRC (for --in-place) '{src}' is not writable"),
    "stale-folder": (_stale("folder"), "'{tmp}/o/train.py' is a folder where SRC has a file"),
    "stale-file": (_stale("file"), "'{tmp}/o/pkg' is a file where SRC has a folder"),
    "stale-link": (_stale("link"), "'{tmp}/o/pkg' is a symbolic link where SRC has a folder"),
    "root": (_source("root"), "SRC '/' is the file system root"),
    "dangling-link": (_source("dangling"), "SRC '{tmp}/s' is a dangling symbolic link"),
    "link-loop": (_source("loop"), "SRC '{tmp}/s' is a symbolic link loop"),
    "fifo": (_source("fifo"), "SRC '{tmp}/s' is a named pipe (FIFO), which is never read"),
    "dev-null": (_source("null"), "SRC '/dev/null' is a character device"),
    "format-unknown": (_args("{src}", "-o", "{tmp}/o", "--format", "foo"),
                       "unknown report format 'foo'"),
    "format-empty": (_args("{src}", "-o", "{tmp}/o", "--format", ""),
                     "--format '' names no report format"),
    "src-inside-out": (_args("{src}", "-o", "{tmp}", "--force"), "SRC '{src}' is inside OUT"),
    "report-inside-out": (_args("{src}", "-o", "{tmp}/o", "--report", "{tmp}/o/r"),
                          "--report '{tmp}/o/r' is inside OUT"),
    "report-holds-src-file": (_args("{src}/train.py", "--report", "{src}"),
                              "--report '{src}' contains SRC '{src}/train.py'"),
}
# fmt: on


@pytest.mark.parametrize("case", sorted(USER_ERRORS))
def test_user_errors_exit_2_before_any_work(tree, tmp_path, capsys, monkeypatch, case):
    make, message = USER_ERRORS[case]
    argv = make(tree, tmp_path, monkeypatch)
    before = snapshot(tmp_path)
    assert main(["migrate", *argv]) == 2
    err = capsys.readouterr().err
    monkeypatch.undo()
    assert message.format(src=tree, tmp=tmp_path) in err
    assert err.count("\n") == 1 and err.startswith("tf2npu migrate: error: ")
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before  # nothing written


def test_a_full_disk_is_one_message_and_no_half_written_file(tree, tmp_path, capsys, monkeypatch):
    def full(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    assert main(["migrate", str(tree), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    monkeypatch.undo()
    assert "No space left on device; free some space" in err and "Traceback" not in err
    assert [p for p, kind in snapshot(tmp_path / "o").items() if kind != "dir"] == []


def test_a_full_disk_while_writing_the_report(tree, tmp_path, capsys, monkeypatch):
    from tf2npu.migrate import report

    def full(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(report, "render_json", full)
    assert main(["migrate", str(tree), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"cannot write the report in --report '{tmp_path}/o_report'" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [["/"], ["/dev/null"], ["{src}", "--format", ""]])
def test_console_script_answers_user_errors_without_traceback(tree, tmp_path, argv):
    exe = Path(sys.executable).parent / "tf2npu"
    args = [a.format(src=tree) for a in argv]
    done = subprocess.run([str(exe), "migrate", *args, "-o", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    assert "Traceback\n" not in done.stderr and "error:" in done.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_a_diff_reader_that_stops_early_is_not_an_error(tree, tmp_path):
    exe = Path(sys.executable).parent / "tf2npu"
    argv = [str(exe), "migrate", str(tree), "-o", str(tmp_path / "o"), "--diff"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head -0`: the first write gets EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait() == 1  # py2.py failed, as in every run of this tree
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert (tmp_path / "o_report" / "changes.diff").exists()


def test_piped_summary_keeps_each_finding_on_one_line(tmp_path, capsys):
    """Issue 10: off a terminal rich wrapped at 80 columns, cutting findings mid-sentence."""
    script = write(tmp_path / "t.py", "import tensorflow as tf\ntf.enable_eager_execution()\n")
    assert main(["migrate", str(script), "-o", str(tmp_path / "o.py")]) == 1
    lines = capsys.readouterr().err.splitlines()
    finding = [line for line in lines if "[eager_execution]" in line]
    assert len(finding) == 1 and finding[0].rstrip().endswith("never on the NPU")


def test_piped_summary_is_never_padded(tmp_path, capsys, monkeypatch):
    """Issue 24: off a terminal each line was padded with blanks to 1000 columns."""
    monkeypatch.delenv("COLUMNS", raising=False)
    script = write(tmp_path / "t.py", "import tensorflow as tf\ntf.enable_eager_execution()\n")
    assert main(["migrate", str(script), "-o", str(tmp_path / "o.py")]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert [line for line in lines if line != line.rstrip()] == []
    assert lines[lines.index("Errors and warnings") + 2] == (
        "        [eager_execution] tf.enable_eager_execution() switches the script to eager "
        "execution, but the Ascend TF adapter runs TF 1.15 graphs only (sessions, Estimator, "
        "Keras in a session): eager ops would run on the host CPU, never on the NPU"
    )


TABLE_IN_PIPELINE = (
    "import tensorflow as tf\n"
    "table = tf.lookup.StaticHashTable(initializer, -1)\n"
    "ds = tf.data.TFRecordDataset(files).map(lambda x: table.lookup(x))\n"
)


def test_a_pipeline_table_is_fixed_in_the_session_config_or_fails_the_run(tmp_path, capsys):
    """Seed 000 case 01: mix_compile_mode written where the tool writes the config, else exit 1."""
    bare = write(tmp_path / "bare.py", TABLE_IN_PIPELINE)
    assert main(["migrate", str(bare), "-o", str(tmp_path / "bare_out.py")]) == 1
    err = capsys.readouterr().err
    assert err.index("error   ") < err.index("warning ")  # the error is listed first
    assert "[lookup_table_in_pipeline]" in err
    session = write(tmp_path / "s.py", TABLE_IN_PIPELINE + "sess = tf.Session()\n")
    assert main(["migrate", str(session), "-o", str(tmp_path / "s_out.py")]) == 0
    text = (tmp_path / "s_out.py").read_text()
    assert 'custom_op.parameter_map["mix_compile_mode"].b = True' in text
    assert "sess = tf.Session(config=npu_session_config())" in text


def test_keep_horovod_import_flag(tmp_path):
    src = tmp_path / "train.py"
    src.write_text("import horovod.tensorflow as hvd\nr = hvd.rank()\n")
    out = tmp_path / "out.py"
    assert main(["migrate", str(src), "-o", str(out), "--keep-horovod-import"]) == 0
    assert "import horovod.tensorflow as hvd\nr = get_rank_id()\n" in out.read_text()
    assert main(["migrate", str(src), "-o", str(tmp_path / "plain.py")]) == 0
    assert "horovod" not in (tmp_path / "plain.py").read_text()
