"""Walking, output placement, links, unreadable files and atomic writes."""

import errno
import os
import signal
import stat
from pathlib import Path

import pytest

from tf2npu import atomic
from tf2npu.errors import UsageError
from tf2npu.migrate import tree, workers
from tf2npu.migrate.model import FileStatus, Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.tree import WriteError, make_plan, migrate_tree
from tf2npu.migrate.walk import make_folders
from tf2npu.migrate.workers import usable_jobs

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


def deny(monkeypatch, name: str, what: str = "open") -> None:
    """Root reads anything: make ``os.open`` (for reading) or ``os.scandir`` refuse ``name``."""
    real = getattr(os, what)

    def refuse(path, *args, **kwargs):
        flags = args[0] if args else 0
        if os.path.basename(os.fspath(path)) == name and not flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, what, refuse)


def test_unreadable_file_is_reported_failed(tmp_path, monkeypatch):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "locked.py").write_bytes(SESSION)
    deny(monkeypatch, "locked.py")
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


# -- data loss ----------------------------------------------------------------------------------
def test_src_inside_out_is_refused_even_with_force(tmp_path):
    """`migrate p/b -o p --force` (repo/pkg/pkg) would overwrite SRC's own files."""
    pkg = tmp_path / "p" / "b"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_bytes(SESSION)
    (tmp_path / "p" / "b" / "b").mkdir()
    with pytest.raises(UsageError, match=r"SRC .* is inside OUT"):
        make_plan(pkg, tmp_path / "p", force=True)
    assert (pkg / "m.py").read_bytes() == SESSION


def test_force_never_writes_through_a_link_left_in_out(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    src = tmp_path / "proj"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "m.py").write_bytes(SESSION)
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside, out / "sub")  # an earlier run's link, where SRC now has a folder
    with pytest.raises(UsageError, match=r"'.*/out/sub' is a symbolic link where SRC has a folder"):
        run(src, out, force=True)
    assert list(outside.iterdir()) == []
    assert os.path.islink(out / "sub")  # nothing was written


@pytest.mark.parametrize("stale", ["file", "folder"])
def test_force_refuses_other_stale_types_before_writing(tmp_path, stale):
    src = tmp_path / "proj"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "m.py").write_bytes(SESSION)
    (src / "a.py").write_bytes(SESSION)
    out = tmp_path / "out"
    out.mkdir()
    if stale == "file":
        (out / "pkg").write_bytes(b"old")  # SRC has a folder there
        expected = "'pkg' is a file where SRC has a folder"
    else:
        (out / "a.py").mkdir()  # SRC has a file there
        expected = "'a.py' is a folder where SRC has a file"
    with pytest.raises(UsageError, match=expected.replace("'", ".*")):
        run(src, out, force=True)
    assert not (out / "a.py").is_file()


def test_make_folders_refuses_a_link_on_the_way(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "out").mkdir()
    os.symlink(outside, tmp_path / "out" / "sub")
    with pytest.raises(NotADirectoryError):
        make_folders(tmp_path / "out", "sub/deeper")
    assert list(outside.iterdir()) == []


def test_a_stale_link_where_src_has_a_file_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim.py"
    victim.write_bytes(b"keep me\n")
    src = tmp_path / "proj"
    src.mkdir()
    (src / "a.py").write_bytes(SESSION)
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / "a.py")
    run(src, out, force=True)
    assert victim.read_bytes() == b"keep me\n"
    assert not os.path.islink(out / "a.py") and b"npu_config_proto" in (out / "a.py").read_bytes()


def test_backup_never_replaces_an_existing_bak(tmp_path):
    src = tmp_path / "p"
    src.mkdir()
    (src / "t.py").write_bytes(SESSION)
    (src / "t.py.bak").write_bytes(b"the user's own backup\n")
    plan = make_plan(src, in_place=True, backup=True)
    report = migrate_tree(plan, MigrateOptions())
    assert (src / "t.py.bak").read_bytes() == b"the user's own backup\n"
    assert (src / "t.py.bak.1").read_bytes() == SESSION
    (result,) = [f for f in report.files if f.path == "t.py"]
    notes = [f.message for f in result.findings if f.rule == "files"]
    assert notes == ["original kept as t.py.bak.1 (t.py.bak existed already)"]
    again = migrate_tree(plan, MigrateOptions())  # the file is migrated: nothing backed up
    assert not (src / "t.py.bak.2").exists()
    assert [f.status for f in again.files if f.path == "t.py"] == [FileStatus.UNCHANGED]


def test_first_backup_is_named_in_the_report(tmp_path):
    src = tmp_path / "p"
    src.mkdir()
    (src / "t.py").write_bytes(SESSION)
    report = migrate_tree(make_plan(src, in_place=True, backup=True), MigrateOptions())
    assert (src / "t.py.bak").read_bytes() == SESSION
    assert report.files[0].findings[0].message == "original kept as t.py.bak"


@pytest.mark.parametrize(
    ("single", "report", "message"),
    [
        (False, "out", "--report .* is inside OUT"),
        (False, "out/r", "--report .* is inside OUT"),
        (False, ".", "--report .* contains SRC"),
        (True, ".", "--report .* contains SRC"),
        (True, "proj", "--report .* contains SRC"),
    ],
)
def test_report_folder_overlapping_out_or_src_is_refused(tmp_path, single, report, message):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "summary.md").write_bytes(b"the user's notes\n")
    (src / "a.py").write_bytes(SESSION)
    source = src / "a.py" if single else src
    out = tmp_path / ("a_npu.py" if single else "out")
    with pytest.raises(UsageError, match=message):
        make_plan(source, out, tmp_path / report)
    assert (src / "summary.md").read_bytes() == b"the user's notes\n"


# -- inputs that vanish or hang -----------------------------------------------------------------
def test_unreadable_folder_is_reported_failed(tmp_path, monkeypatch):
    src = tmp_path / "proj"
    (src / "locked").mkdir(parents=True)
    (src / "locked" / "m.py").write_bytes(SESSION)
    (src / "a.py").write_bytes(SESSION)
    deny(monkeypatch, "locked", "scandir")
    _, report = run(src, tmp_path / "out")
    by_path = {f.path: f for f in report.files}
    assert by_path["locked"].status is FileStatus.FAILED
    assert by_path["locked"].reason == "cannot read this folder: Permission denied"
    assert report.failed


def alarm(seconds: int):
    """Fail instead of hanging forever if a special file is ever read."""

    def expired(*_):
        raise TimeoutError("blocked reading a special file")

    signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)


def test_special_files_are_never_read(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    os.mkfifo(src / "pipe.py")
    os.mknod(src / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # like /dev/zero: endless
    alarm(20)
    try:
        _, report = run(src, tmp_path / "out")
    finally:
        signal.alarm(0)
    by_path = {f.path: f for f in report.files}
    assert by_path["pipe.py"].status is FileStatus.COPIED
    assert "named pipe (FIFO): recreated" in by_path["pipe.py"].findings[0].message
    assert stat.S_ISFIFO(os.lstat(tmp_path / "out" / "pipe.py").st_mode)
    assert by_path["zero"].status is FileStatus.FAILED
    assert by_path["zero"].reason.startswith("a character device: never read, not copied")
    assert not os.path.lexists(tmp_path / "out" / "zero")


def test_symlink_loops_are_recreated_and_reported(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    os.symlink("b", src / "a")
    os.symlink("a", src / "b")
    os.symlink("self", src / "self")
    (src / "m.py").write_bytes(SESSION)
    _, report = run(src, tmp_path / "out")
    assert [f.path for f in report.files] == ["a", "b", "m.py", "self"]
    assert os.readlink(tmp_path / "out" / "self") == "self"
    assert "is a link loop" in report.files[0].findings[0].message
    assert report.files[2].status is FileStatus.MIGRATED


def test_names_that_are_not_utf8_are_kept(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    name = os.fsdecode(b"caf\xe9.py")
    (src / name).write_bytes(SESSION)
    _, report = run(src, tmp_path / "out")
    assert report.files[0].path == "caf\udce9.py"
    assert (tmp_path / "out" / name).read_bytes() != SESSION  # migrated, under the same name


def test_long_names_get_a_temporary_name_that_fits(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / ("x" * 250 + ".py")).write_bytes(SESSION)
    _, report = run(src, tmp_path / "out")
    assert report.files[0].status is FileStatus.MIGRATED


def test_files_above_the_size_limit_are_copied_not_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(tree, "MAX_SOURCE_BYTES", 10)
    src = tmp_path / "proj"
    src.mkdir()
    (src / "big.py").write_bytes(SESSION)
    (src / "big.txt").write_bytes(SESSION)
    _, report = run(src, tmp_path / "out")
    big = report.files[0]
    assert big.status is FileStatus.FAILED
    assert big.reason.startswith(f"not parsed: {len(SESSION)} bytes is above the")
    assert (tmp_path / "out" / "big.py").read_bytes() == SESSION
    assert report.files[1].status is FileStatus.COPIED


def test_leftover_temporary_files_are_removed_by_the_next_run(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "a.py").write_bytes(SESSION)
    (src / ".a.py.0123456789ab.tmp").write_bytes(b"half")  # a killed --in-place run's
    (src / ".hidden.tmp").write_bytes(b"the user's")  # not one of ours
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / ".m.py.ba9876543210.tmp").write_bytes(b"half")
    run(src, out, force=True)
    assert not (out / "sub" / ".m.py.ba9876543210.tmp").exists()
    assert (src / ".a.py.0123456789ab.tmp").exists()  # SRC is never modified without --in-place
    migrate_tree(make_plan(src, in_place=True), MigrateOptions())
    assert sorted(p.name for p in src.iterdir()) == [".hidden.tmp", "a.py"]


def test_a_full_disk_stops_the_run_with_a_message(tmp_path, monkeypatch):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "a.py").write_bytes(SESSION)
    real = atomic.os.replace

    def full(a, b):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", full)
    with pytest.raises(WriteError, match=r"cannot write '.*/out/a.py': No space left on device"):
        run(src, tmp_path / "out")
    monkeypatch.setattr(atomic.os, "replace", real)
    assert list((tmp_path / "out").iterdir()) == []  # no half-written file


def test_jobs_are_capped_by_files_and_cores():
    assert usable_jobs(64, 3) <= 3
    assert usable_jobs(64, 1000) <= (os.cpu_count() or 1)
    assert usable_jobs(2, 0) == 1


def test_workers_that_cannot_start_give_a_clear_error(tmp_path, monkeypatch):
    src = tmp_path / "proj"
    src.mkdir()
    for i in range(4):
        (src / f"m{i}.py").write_bytes(SESSION)
    monkeypatch.setattr(workers, "usable_jobs", lambda jobs, n: jobs)  # even on 1 core

    def no_fork():
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    plan = make_plan(src, tmp_path / "out")
    with pytest.raises(UsageError, match="--jobs 2: cannot start the worker processes"):
        migrate_tree(plan, MigrateOptions(), jobs=2)


def test_a_link_given_as_the_output_file_is_replaced_not_written_through(tmp_path):
    src = tmp_path / "a.py"
    src.write_bytes(SESSION)
    victim = tmp_path / "victim.py"
    victim.write_bytes(b"keep me\n")
    os.symlink(victim, tmp_path / "out.py")
    run(src, tmp_path / "out.py", force=True)
    assert victim.read_bytes() == b"keep me\n"
    assert not os.path.islink(tmp_path / "out.py")
    assert b"npu_config_proto" in (tmp_path / "out.py").read_bytes()


def test_empty_folders_are_recreated_but_not_reported_as_files(tmp_path):
    src = tmp_path / "proj"
    (src / "logs" / "old").mkdir(parents=True)
    (src / "data").mkdir()
    (src / "a.py").write_bytes(SESSION)
    _, report = run(src, tmp_path / "out")
    assert (tmp_path / "out" / "logs" / "old").is_dir() and (tmp_path / "out" / "data").is_dir()
    assert [f.path for f in report.files] == ["a.py"]
