"""Walking, output placement, links, unreadable files and atomic writes."""

import os
from pathlib import Path

import pytest

from tf2npu.errors import UsageError
from tf2npu.migrate.model import FileStatus, Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.tree import make_plan, migrate_tree

SESSION = b"import tensorflow as tf\nsess = tf.Session()\n"


def run(src: Path, out: Path, **kw):
    plan = make_plan(src, out, **kw)
    return plan, migrate_tree(plan, MigrateOptions())


def test_single_file_defaults_next_to_it(tmp_path):
    src = tmp_path / "train.py"
    src.write_bytes(SESSION)
    plan = make_plan(src)
    assert plan.output == tmp_path / "train_npu.py"
    assert plan.report_dir == tmp_path / "train_npu_report"
    report = migrate_tree(plan, MigrateOptions())
    assert [f.status for f in report.files] == [FileStatus.MIGRATED]
    assert b"npu_config_proto()" in plan.output.read_bytes()


def test_folder_defaults_and_sorted_results(tmp_path):
    src = tmp_path / "proj"
    for rel in ("b.py", "a/z.py", "a/y.txt"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(SESSION)
    plan, report = run(src, None)
    assert plan.output == tmp_path / "proj_npu"
    assert [f.path for f in report.files] == ["a/y.txt", "a/z.py", "b.py"]


def test_links_are_recreated_not_followed(tmp_path):
    outside = tmp_path / "secret.py"
    outside.write_bytes(SESSION)
    src = tmp_path / "proj"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "real.py").write_bytes(SESSION)
    os.symlink("sub/real.py", src / "inner.py")
    os.symlink(str(outside), src / "outer.py")
    os.symlink("sub", src / "linkdir")
    _, report = run(src, tmp_path / "out")
    out = tmp_path / "out"
    assert os.readlink(out / "inner.py") == "sub/real.py"
    assert os.readlink(out / "outer.py") == str(outside)
    assert os.readlink(out / "linkdir") == "sub"
    by_path = {f.path: f for f in report.files}
    assert by_path["outer.py"].status is FileStatus.COPIED
    assert by_path["outer.py"].findings[0].severity is Severity.WARNING
    assert "outside SRC" in by_path["outer.py"].findings[0].message
    assert by_path["inner.py"].findings[0].severity is Severity.INFO
    assert outside.read_bytes() == SESSION


def test_unreadable_file_is_reported_failed(tmp_path, monkeypatch):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "locked.py").write_bytes(SESSION)
    real = Path.read_bytes

    def deny(self):
        if self.name == "locked.py":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", deny)  # root can read anything: simulate it
    _, report = run(src, tmp_path / "out")
    assert report.files[0].status is FileStatus.FAILED
    assert report.files[0].reason == "cannot read: Permission denied"


def test_no_temporary_files_are_left(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    for i in range(5):
        (src / f"m{i}.py").write_bytes(SESSION)
    run(src, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"m{i}.py" for i in range(5)]


def test_file_mode_is_kept(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "run.py").write_bytes(SESSION)
    (src / "run.py").chmod(0o755)
    run(src, tmp_path / "out")
    assert (tmp_path / "out" / "run.py").stat().st_mode & 0o777 == 0o755


def test_interrupted_write_leaves_no_partial_file(tmp_path, monkeypatch):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "a.py").write_bytes(SESSION)

    def explode(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", explode)
    with pytest.raises(KeyboardInterrupt):
        run(src, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_report_inside_source_is_refused(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    with pytest.raises(UsageError, match="inside SRC"):
        make_plan(src, tmp_path / "out", tmp_path / "proj" / "report")


def test_single_file_output_rules(tmp_path):
    src = tmp_path / "a.py"
    src.write_bytes(SESSION)
    (tmp_path / "exists.py").write_bytes(b"")
    with pytest.raises(UsageError, match="use --force"):
        make_plan(src, tmp_path / "exists.py")
    with pytest.raises(UsageError, match="is a folder"):
        make_plan(src, tmp_path)
    assert make_plan(src, tmp_path / "exists.py", force=True).output == tmp_path / "exists.py"
