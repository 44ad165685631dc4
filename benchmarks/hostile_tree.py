"""``tf2npu migrate`` on a hostile tree: special files, link loops, links in and out of SRC,
unreadable entries, odd names and huge files; whole runs and runs interrupted by SIGINT and
SIGKILL, with ``--jobs 1`` and ``--jobs 4``.

For every case it checks, and prints as a table:

* **SRC identical**: every entry below SRC has the same type, mode, bytes or link target;
* **all accounted**: every SRC entry is in OUT with its type, or in ``report.json`` as failed
  or with a finding (whole runs only: an interrupted run writes no report);
* **nothing outside**: nothing changed in the fixture's folder except OUT and the report
  folder (the link targets outside SRC included);
* **no process left**: no process of the run's session survives it (workers die with the
  parent, also after SIGKILL);
* **leftovers**: hidden temporary files left in OUT (a killed run can leave one per worker),
  and whether the next ``--force`` run removed them.

Root reads every file whatever its mode, so "unreadable" entries are simulated by the launcher
(it makes ``os.open`` and ``os.scandir`` refuse names starting with ``unreadable``) as well as
made mode 000. Usage::

    PYTHONPATH=src python benchmarks/hostile_tree.py [--files 400] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

LAUNCHER = r"""
import os, sys
real_open, real_scandir = os.open, os.scandir
def _denied(path):
    return os.path.basename(os.fsdecode(os.fspath(path))).startswith("unreadable")
def _open(path, flags, *args, **kwargs):
    if _denied(path) and not flags & (os.O_WRONLY | os.O_RDWR):
        raise PermissionError(13, "Permission denied", path)
    return real_open(path, flags, *args, **kwargs)
def _scandir(path="."):
    if _denied(path):
        raise PermissionError(13, "Permission denied", path)
    return real_scandir(path)
os.open, os.scandir = _open, _scandir
from tf2npu.cli.main import main
sys.exit(main(sys.argv[1:]))
"""

SCRIPT = '''"""Synthetic TF 1.x training script number {n}."""
import tensorflow as tf
import horovod.tensorflow as hvd

flags = tf.app.flags
flags.DEFINE_integer("steps", 100, "training steps")


def model_fn(features, labels, mode, params):
    x = tf.layers.dense(features["x"], 64, activation=tf.nn.relu)
    x = tf.nn.dropout(x, keep_prob=0.9)
    logits = tf.layers.dense(x, 10)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    opt = tf.train.AdamOptimizer(1e-3 * hvd.size())
    opt = hvd.DistributedOptimizer(opt)
    train_op = opt.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
    ds = tf.data.Dataset.from_tensor_slices(({{"x": tf.zeros([64, 8])}}, tf.zeros([64], tf.int32)))
    return ds.repeat().batch(16)


def main(_):
    hvd.init()
    config = tf.estimator.RunConfig(model_dir="/tmp/m{n}", save_checkpoints_steps=50)
    est = tf.estimator.Estimator(model_fn=model_fn, config=config)
    est.train(input_fn, max_steps=100)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())


if __name__ == "__main__":
    tf.app.run()
'''


# -- the fixture --------------------------------------------------------------------------------
def build(base: Path, files: int, huge_mb: int = 50) -> Path:
    """The hostile tree below ``base/src``; link targets outside it in ``base/outside``;
    ``huge_mb``: the size of the generated Python file (above the 4 MiB parse limit)."""
    src, outside = base / "src", base / "outside"
    (outside / "secret_dir").mkdir(parents=True)
    (outside / "secret.py").write_text("import tensorflow as tf\nsess = tf.Session()\n")
    for n in range(files):
        path = src / f"pkg{n % 10}" / f"sub{n % 3}" / f"train_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SCRIPT.format(n=n))
        (path.parent / f"data_{n}.csv").write_text("a,b\n1,2\n")
    for n in range(4):  # the links and specials below live in these, however few the files
        (src / f"pkg{n}").mkdir(parents=True, exist_ok=True)
    _specials(src)
    _links(src, outside)
    _odd_names(src)
    _huge_and_broken(src, huge_mb)
    _unreadable(src)
    return src


def _specials(src: Path) -> None:
    os.mkfifo(src / "pipe.py")
    os.mkfifo(src / "pkg0" / "fifo")
    try:
        os.mknod(src / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # endless, like /dev/zero
        os.mknod(src / "null.py", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pass  # not root: no devices in the fixture
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(src / "server.sock"))
    sock.close()


def _links(src: Path, outside: Path) -> None:
    os.symlink("pkg0/sub0/train_0.py", src / "inner.py")
    os.symlink("pkg1", src / "inner_dir")
    os.symlink(outside / "secret.py", src / "outer.py")
    os.symlink("../outside/secret_dir", src / "pkg2" / "outer_dir")
    os.symlink("nowhere.py", src / "dangling.py")
    os.symlink("loop_b", src / "loop_a")
    os.symlink("loop_a", src / "loop_b")
    os.symlink("self", src / "self")
    os.symlink(".", src / "pkg3" / "dot")  # a folder link pointing at its own folder


def _odd_names(src: Path) -> None:
    odd = src / "odd"
    (odd / "empty" / "deeper").mkdir(parents=True)  # empty folders
    names = [b"caf\xe9.py", b"\xff\xfe.txt", b"new\nline.py", b"-rf.py", b"sp ace.py",
             "日本語.py".encode(), b"x" * 250 + b".py", b"summary.md", b".hidden.py"]  # fmt: skip
    for name in names:
        with open(os.path.join(os.fsencode(odd), name), "wb") as stream:
            stream.write(b"import tensorflow as tf\nsess = tf.Session()\n")


def _huge_and_broken(src: Path, huge_mb: int) -> None:
    huge = src / "huge"
    huge.mkdir()
    line = b"x = [" + b"1, " * 30 + b"]\n"
    (huge / "generated.py").write_bytes(line * (huge_mb * 1024 * 1024 // len(line)))
    (huge / "blob.bin").write_bytes(os.urandom(1024) * (2 * huge_mb * 1024 // 5))
    (huge / "deep.py").write_bytes(b"x = " + b"-" * 200_000 + b"1\n")
    (huge / "lambdas.py").write_bytes(b"f = " + b"lambda: " * 100_000 + b"1\n")
    (huge / "py2.py").write_bytes(b'print "hello"\n')
    (huge / "binary.py").write_bytes(bytes(range(256)))
    (huge / "empty.py").write_bytes(b"")


def _unreadable(src: Path) -> None:
    folder = src / "unreadable_dir"
    folder.mkdir()
    (folder / "hidden.py").write_text("x = 1\n")
    (src / "unreadable.py").write_text("x = 1\n")
    os.chmod(folder / "hidden.py", 0)
    os.chmod(src / "unreadable.py", 0)
    os.chmod(folder, 0)


# -- observing ----------------------------------------------------------------------------------
def snapshot(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, tuple[object, ...]]:
    """Every entry below ``root``: type, mode and content hash or link target (no link or
    special file is followed or read)."""
    found: dict[str, tuple[object, ...]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(folder, d) not in skip]
        for name in dirs + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                found[rel] = ("file", info.st_mode, _digest(path))
            else:
                found[rel] = (stat.S_IFMT(info.st_mode), info.st_mode)
    return found


def _digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def session_processes(sid: int) -> list[int]:
    """Live processes of session ``sid`` (the run is started in a session of its own)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            alive.append(int(entry))
    return alive


def leftovers(out: Path) -> int:
    if not out.exists():
        return 0
    from tf2npu.atomic import TEMP_NAME

    return sum(1 for _, _, files in os.walk(out) for name in files if TEMP_NAME.match(name))


def accounted(src: Path, out: Path, report: Path) -> list[str]:
    """SRC entries (folders included) neither in OUT with their type nor in report.json
    (failed, or with a finding; an entry below a reported folder counts as reported)."""
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    noted = {f["path"] for f in data["files"] if f["status"] == "failed" or f["findings"]}
    missing = []
    for rel, entry in snapshot(src).items():
        parts = rel.split("/")
        if _below(parts, noted):
            continue
        copy = out / rel
        mode = os.lstat(copy).st_mode if os.path.lexists(copy) else 0
        kind = "link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else stat.S_IFMT(mode)
        if kind != entry[0]:
            missing.append(rel)
    return missing


def _below(parts: list[str], noted: set[str]) -> bool:
    return any("/".join(parts[:i]) in noted for i in range(1, len(parts) + 1))


# -- running ------------------------------------------------------------------------------------
@dataclass
class Row:
    case: str
    jobs: int
    exit: int
    seconds: float
    src_identical: bool
    nothing_outside: bool
    processes_left: int
    leftovers: int = 0
    peak_mb: float = 0.0
    accounted: str = "-"
    notes: list[str] = field(default_factory=list)


def run_cli(
    base: Path, jobs: int, extra: list[str], stop: tuple[int, float] | None
) -> tuple[int, float, int, float]:
    """Run the CLI in a session of its own; optionally send a signal after some seconds.

    Returns the exit code, the seconds, the processes of the session left after it, and the
    peak resident memory in MB of the run (its largest process, workers included).
    """
    argv = [sys.executable, "-c", LAUNCHER, "migrate", str(base / "src"), "-o", str(base / "out"),
            "--report", str(base / "report"), "--jobs", str(jobs), *extra]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    done = None
    if stop is not None:
        sig, after = stop
        while done is None and time.perf_counter() - start < after:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            done = (status, usage) if pid else None
            time.sleep(0.01)
        if done is None:
            os.kill(proc.pid, sig)
    if done is None:
        _, status, usage = os.wait4(proc.pid, 0)
        done = (status, usage)
    proc.returncode = os.waitstatus_to_exitcode(done[0])  # reaped here, not by Popen
    seconds = time.perf_counter() - start
    deadline = time.monotonic() + 10
    while session_processes(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    peak = done[1].ru_maxrss / 1024
    return proc.returncode, seconds, len(session_processes(proc.pid)), peak


def case(base: Path, name: str, jobs: int, stop: tuple[int, float] | None,
         src_before: dict[str, tuple[object, ...]]) -> Row:  # fmt: skip
    outside_before = snapshot(base, skip=(base / "out", base / "report"))
    code, seconds, left, peak = run_cli(base, jobs, ["--force"], stop)
    row = Row(name, jobs, code, seconds, snapshot(base / "src") == src_before,
              snapshot(base, skip=(base / "out", base / "report")) == outside_before, left,
              leftovers(base / "out"), peak)  # fmt: skip
    if stop is None:
        missing = accounted(base / "src", base / "out", base / "report")
        row.accounted = "yes" if not missing else f"no: {missing[:3]}"
    return row


def measure(base: Path, files: int) -> list[Row]:
    start = time.perf_counter()
    build(base, files)
    print(f"fixture built in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    src_before = snapshot(base / "src")
    rows = []
    for jobs in (1, 4):
        full = case(base, "whole run", jobs, None, src_before)
        rows.append(full)
        for sig, label in ((signal.SIGINT, "SIGINT"), (signal.SIGKILL, "SIGKILL")):
            for fraction in (0.5, 0.8):
                rows.append(case(base, f"{label} at {fraction:.0%}", jobs,
                                 (sig, full.seconds * fraction), src_before))  # fmt: skip
        rerun = case(base, "rerun --force", jobs, None, src_before)
        rows.append(rerun)
    return rows


def print_table(rows: list[Row]) -> None:
    head = ("case", "jobs", "exit", "s", "peak MB", "SRC identical", "nothing outside",
            "procs left", "tmp left", "all accounted")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = (r.case, r.jobs, r.exit, f"{r.seconds:.1f}", f"{r.peak_mb:.0f}",
                 _yes(r.src_identical),
                 _yes(r.nothing_outside), r.processes_left, r.leftovers, r.accounted)  # fmt: skip
        print("| " + " | ".join(str(c) for c in cells) + " |")


def _yes(flag: bool) -> str:
    return "yes" if flag else "**NO**"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=400, help="TF scripts in the fixture")
    parser.add_argument("--keep", type=Path, help="build the fixture here and keep it")
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True)
        rows = measure(args.keep, args.files)
    else:
        with tempfile.TemporaryDirectory(prefix="hostile_") as base:
            rows = measure(Path(base), args.files)
            _unlock(Path(base))
    print_table(rows)
    bad = [r for r in rows if not (r.src_identical and r.nothing_outside and not r.processes_left)
           or r.accounted.startswith("no")]  # fmt: skip
    return 1 if bad else 0


def _unlock(base: Path) -> None:
    """Give the mode-000 entries their permissions back so the folder can be removed."""
    for folder in (base / "src", base / "out"):
        for path in (folder / "unreadable_dir", folder / "unreadable_dir" / "hidden.py",
                     folder / "unreadable.py"):  # fmt: skip
            if os.path.lexists(path):
                os.chmod(path, 0o700)


if __name__ == "__main__":
    sys.exit(main())
