"""``tf2npu run``: running a script as ``python`` would, its exit status, and the run summary."""

import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from tf2npu import runtime
from tf2npu.artifacts.run_summary import RunSummary
from tf2npu.cli import run as run_cli
from tf2npu.cli.main import main
from tf2npu.runtime import job
from tf2npu.runtime.job import RunSpec

EXE = Path(sys.executable).parent / "tf2npu"
SUMMARY_KEYS = {
    "schema_version": int,
    "sessions": int,
    "stock_sessions": int,
    "graphs_compiled": int,
    "geops": int,
    "host_ops": int,
    "casts_inserted": int,
    "fusions": dict,
    "steps": int,
    "nonfinite": (dict, type(None)),
    "loss_scale": (dict, type(None)),
    "precision": list,
    "wall_seconds": float,
    "options": dict,
    "options_without_effect": list,
    "options_unknown": list,
    "exit_status": int,
    "error": (dict, type(None)),
    "job_environment": dict,
    "dumps": list,
    "profiles": list,
    "deterministic": (dict, type(None)),
    "fusion_instances_unmatched": list,
    "injected_faults": list,
    "races": list,
    "write_errors": list,
    "record": (dict, type(None)),
}


needs_runtime = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def clean_runtime():
    """Undo the run counters the command fills (tests/conftest.py restores the settings)."""
    yield
    runtime.reset_stats()


@pytest.fixture
def no_tf(monkeypatch, clean_runtime):
    """Run the whole command in-process without entering the TF1 environment (no TensorFlow)."""
    entered = []
    monkeypatch.setattr(job, "_enter_tf1_environment", lambda: entered.append(True))
    return entered


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


# -- usage errors: exit 2 before the script runs ---------------------------------------------------


MARKER_SCRIPT = "from pathlib import Path\nPath(__file__).with_name('ran.marker').touch()\n"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("bogus=1", "unknown NpuOptimizer option 'bogus'"),
        ("precision_mode=fp99", "--option precision_mode=fp99: not a valid value; use one of:"),
        ("mix_compile_mode=maybe", "use mix_compile_mode=true or mix_compile_mode=false"),
        ("iterations_per_loop=0", "--option iterations_per_loop=0: not a valid value"),
        ("precision_mode", "expected KEY=VALUE"),
    ],
)
def test_bad_option_is_a_usage_error_before_the_script_runs(
    tmp_path, capsys, no_tf, option, message
):
    script = write(tmp_path / "t.py", MARKER_SCRIPT)
    code = main(["run", "--option", option, "--report-dir", str(tmp_path / "r"), str(script)])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "ran.marker").exists()
    assert not no_tf  # the TF1 environment was not even entered
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--dump", "d", "--dump-step", "5-2"], "--dump-step 5-2: not a valid value;"),
        (["--precision-mode", "fp99"], "--precision-mode fp99: not a valid value; use one of:"),
    ],
)
def test_a_bad_flag_value_is_named_as_the_user_wrote_it(tmp_path, capsys, no_tf, flags, message):
    script = write(tmp_path / "t.py", MARKER_SCRIPT)
    flags = [str(tmp_path / f) if f == "d" else f for f in flags]
    code = main(["run", *flags, "--report-dir", str(tmp_path / "r"), str(script)])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "ran.marker").exists()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.py", "SCRIPT '{p}' does not exist; give the path of the Python"),
        (lambda d: d, "SCRIPT '{p}' is a folder"),
        (lambda d: write(d / "notes.txt", "x"), "SCRIPT '{p}' is not a .py file"),
    ],
)
def test_script_that_is_not_a_python_file_is_a_usage_error(tmp_path, capsys, no_tf, make, message):
    path = make(tmp_path)
    assert main(["run", str(path)]) == 2
    assert message.format(p=path) in capsys.readouterr().err


def test_no_script_is_a_usage_error(capsys, no_tf):
    assert main(["run", "--no-npu"]) == 2
    assert "tf2npu run: error: no SCRIPT given; e.g. tf2npu run train.py" in capsys.readouterr().err


def test_report_dir_that_cannot_be_created_is_a_usage_error(tmp_path, capsys, no_tf):
    script = write(tmp_path / "t.py", MARKER_SCRIPT)
    blocker = write(tmp_path / "file", "")
    assert main(["run", "--report-dir", str(blocker / "r"), str(script)]) == 2
    assert f"--report-dir '{blocker / 'r'}' cannot be created" in capsys.readouterr().err
    assert not (tmp_path / "ran.marker").exists()


def test_export_graph_into_a_file_is_a_usage_error(tmp_path, capsys, no_tf):
    script = write(tmp_path / "t.py", MARKER_SCRIPT)
    blocker = write(tmp_path / "file", "")
    assert main(["run", "--export-graph", str(blocker), str(script)]) == 2
    assert f"--export-graph '{blocker}' is a file; give a folder" in capsys.readouterr().err
    assert not (tmp_path / "ran.marker").exists()


# -- the whole command in-process, without TensorFlow -----------------------------------------------


def read_summary(report_dir: Path) -> dict:
    data = json.loads((report_dir / "run_summary.json").read_text())
    assert all(isinstance(data[key], kind) for key, kind in SUMMARY_KEYS.items()), data
    assert list(data) == list(SUMMARY_KEYS)  # documented order
    return data


def test_command_exit_code_and_json_are_the_scripts_status(tmp_path, capsys, no_tf):
    script = write(tmp_path / "t.py", "import sys\nprint(sys.argv[1:])\nsys.exit(3)\n")
    report = tmp_path / "report"
    code = main(["run", "--report-dir", str(report), str(script), "--epochs", "1", "--quiet"])
    assert code == 3
    assert no_tf == [True]
    captured = capsys.readouterr()
    assert captured.out == "['--epochs', '1', '--quiet']\n"  # --quiet after SCRIPT is the script's
    data = read_summary(report)
    assert data["exit_status"] == 3
    assert data["schema_version"] == 1
    assert data["sessions"] == 0 and data["stock_sessions"] == 0
    assert 0 <= data["wall_seconds"] < 60
    assert "tf2npu run t.py: exit status 3" in captured.err
    assert str(report / "run_summary.json") in captured.err


def test_a_run_flag_after_the_script_is_the_scripts_and_says_so(tmp_path, capsys, no_tf):
    script = write(tmp_path / "t.py", "import sys\nprint(sys.argv[1:])\n")
    report = tmp_path / "report"
    code = main(["run", "--quiet", "--report-dir", str(report), str(script), "--no-npu", "-h"])
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out == "['--no-npu', '-h']\n"  # passed on untouched
    assert captured.err.splitlines() == [
        f"tf2npu run: warning: --no-npu comes after SCRIPT, so {script} gets it as its own "
        "argument and tf2npu run does not; to use it, put it before SCRIPT: tf2npu run "
        f"--no-npu ... {script}"
    ]
    assert read_summary(report)["options"] == {}


def test_after_an_explicit_double_dash_nothing_is_said(tmp_path, capsys, no_tf):
    script = write(tmp_path / "t.py", "import sys\nprint(sys.argv[1:])\n")
    code = main(["run", "--quiet", "--report-dir", str(tmp_path / "r"), "--", str(script),
                 "--no-npu"])  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("['--no-npu']\n", "")


def test_failing_script_still_writes_the_summary(tmp_path, capsys, no_tf):
    script = write(tmp_path / "t.py", "raise ValueError('no data')\n")
    code = main(["run", "--report-dir", str(tmp_path / "r"), "--quiet", str(script)])
    assert code == 1
    err = capsys.readouterr().err
    assert err.endswith("ValueError: no data\n")  # --quiet: no summary after the traceback
    assert read_summary(tmp_path / "r")["exit_status"] == 1


def test_settings_reach_the_runtime(tmp_path, no_tf):
    seen = tmp_path / "seen.json"
    script = write(
        tmp_path / "t.py",
        "import json, sys\nfrom tf2npu import runtime\ns = runtime.current()\n"
        f"open({str(seen)!r}, 'w').write(json.dumps([s.npu, dict(s.overrides), s.execution, "
        "str(s.report_dir)]))\n",
    )
    code = main(["run", "--option", "precision_mode=allow_mix_precision", "--option",
                 "mix_compile_mode=1", "--no-npu", "--execution", "xla", "--report-dir",
                 str(tmp_path / "r"), "--quiet", str(script)])  # fmt: skip
    assert code == 0
    assert json.loads(seen.read_text()) == [
        False,
        {"precision_mode": "allow_mix_precision", "mix_compile_mode": True},
        "xla",
        str(tmp_path / "r"),
    ]


def test_default_report_dir_is_tf2npu_run_in_the_current_directory(tmp_path, monkeypatch, no_tf):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "t.py", "import os\nos.chdir('/')\n")  # the script moving away changes nothing
    assert main(["run", "--quiet", "t.py"]) == 0
    assert read_summary(tmp_path / "tf2npu-run")["exit_status"] == 0


def test_double_dash_before_script_ends_tf2npu_options(tmp_path, capsys, no_tf):
    script = write(tmp_path / "t.py", "import sys\nprint(sys.argv[1:])\n")
    code = main(
        ["run", "--quiet", "--report-dir", str(tmp_path / "r"), "--", str(script), "--", "a"]
    )
    assert code == 0
    assert capsys.readouterr().out == "['--', 'a']\n"


# -- the terminal summary ---------------------------------------------------------------------------


def render(summary: dict, width: int = 100, **plan_changes) -> str:
    plan = RunSpec(script=Path("/w/train.py"), script_args=(), report_dir=Path("/w/r"),
                           options=(), npu=True, execution="host")  # fmt: skip
    plan = RunSpec(**{**plan.__dict__, **plan_changes})
    console = Console(file=io.StringIO(), width=width, color_system=None)
    typed = RunSummary.from_json(summary)  # the summary as the run made it, from its file
    run_cli.print_summary(typed, console, plan=plan, json_path=Path("/w/r/run_summary.json"))
    return console.file.getvalue()


SUMMARY = {
    "schema_version": 1,
    "sessions": 1,
    "stock_sessions": 1,
    "graphs_compiled": 1,
    "geops": 2,
    "host_ops": 5,
    "casts_inserted": 7,
    "fusions": {"gelu": 1, "layer_norm": 3},
    "steps": 100,
    "nonfinite": None,
    "loss_scale": None,
    "precision": [
        {"op": "d/MatMul", "op_type": "MatMulV2", "dtype": "float16", "reason": "allow_list"},
        {"op": "d/sm", "op_type": "SoftmaxV2", "dtype": "float32", "reason": "mixlist_deny"},
    ],
    "wall_seconds": 12.346,
    "options": {"profiling_mode": True, "precision_mode": "allow_mix_precision"},
    "options_without_effect": ["profiling_mode"],
    "options_unknown": ["sump_mode"],
    "exit_status": 0,
}
EMPTY = {**SUMMARY, "sessions": 0, "stock_sessions": 0, "graphs_compiled": 0, "geops": 0,
         "host_ops": 0, "casts_inserted": 0, "fusions": {}, "steps": 0, "options": {},
         "options_without_effect": [], "options_unknown": []}  # fmt: skip


def test_summary_table_shows_every_counter():
    text = render(SUMMARY)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert lines[0] == "tf2npu run train.py: exit status 0"
    for row in (
        "sessions 1 NPU, 1 stock",
        "mode execution host",
        "graphs compiled 1",
        "GeOps 2",
        "host ops 5",
        "casts inserted 7",
        "fusions gelu x1, layer_norm x3",
        "steps 100",
        "precision float16, allow list: 1 (MatMulV2 x1)",
        "float32, black list by modify_mixlist: 1 (SoftmaxV2 x1): d/sm",
        "wall time 12.35 s",
        "options profiling_mode=true, precision_mode=allow_mix_precision",
        "without effect here profiling_mode",
        "unknown, ignored sump_mode",
        "Summary: /w/r/run_summary.json",
    ):
        assert any(row in line for line in lines), (row, text)
    assert "--option unused" not in text


def test_a_dump_row_says_what_measured_a_stats_dump():
    dumps = [
        {"path": "/w/d", "files": 469, "bytes": 0, "statistics": "tensor_stats op (one pass)",
         "complete": True},
        {"path": "/w/t", "files": 2, "bytes": 2_000_000, "complete": True},
    ]  # fmt: skip
    lines = [" ".join(line.split()) for line in render({**EMPTY, "dumps": dumps}, 200).splitlines()]
    assert [line for line in lines if line.startswith("dump ")] == [
        "dump 469 files, 0.0 MB of tensors in /w/d; statistics by tensor_stats op (one pass)",
        "dump 2 files, 2.0 MB of tensors in /w/t",
    ]


def test_a_recorded_run_names_its_records_and_their_page():
    record = {"steps": "/w/r/steps.jsonl", "page": "/w/r/steps.html", "variables": None,
              "stopped_at_step": None}  # fmt: skip
    text = " ".join(render({**EMPTY, "record": record}).split())
    assert "record /w/r/steps.jsonl; drawn in /w/r/steps.html" in text
    assert "record" not in " ".join(render(EMPTY).split()).replace("run_summary", "")


def test_summary_says_when_an_option_reached_no_npu_session():
    options = ("precision_mode=allow_mix_precision",)
    text = " ".join(render(EMPTY, options=options, npu=False).split())
    assert "mode --no-npu: every session stock" in text
    assert "--option unused precision_mode=allow_mix_precision (--no-npu)" in text
    text = " ".join(render(EMPTY, options=options).split())
    assert "(no NPU session was created)" in text
    assert "fusions none" in text and "options none" in text


def test_long_values_wrap_under_themselves():
    fusions = {"gelu": 2, "layer_norm_grad": 4, "matmul_biasadd": 9, "softmax_cross_entropy": 1}
    text = render({**EMPTY, "fusions": fusions}, width=60)
    assert (
        "fusions              gelu x2, layer_norm_grad x4,\n"
        "                     matmul_biasadd x9,\n"
        "                     softmax_cross_entropy x1\n"
        "steps                0\n"
    ) in text
    assert " \n" not in text  # no trailing blanks in a captured log


# -- end to end, through the console entry point -----------------------------------------------


@pytest.mark.slow
def test_bad_option_end_to_end_runs_nothing(tmp_path):
    write(tmp_path / "t.py", MARKER_SCRIPT)
    done = cli("run", "--option", "bogus=1", "t.py", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("tf2npu run: error: unknown NpuOptimizer option 'bogus'")
    assert not (tmp_path / "ran.marker").exists()
    assert not (tmp_path / "tf2npu-run" / "run_summary.json").exists()


def test_help_teaches_with_examples(tmp_path):
    done = cli("run", "--help", cwd=tmp_path)
    assert done.returncode == 0
    for text in ("SCRIPT [ARGS ...]", "tf2npu run --no-npu train.py", "run_summary.json",
                 "options_without_effect", "options_unknown", "--strict-options",
                 "exit codes:"):  # fmt: skip
        assert text in done.stdout


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
def test_exit_status_and_argv_end_to_end(tmp_path):
    write(tmp_path / "t.py", "import sys\nprint(sys.argv[1:], sys.path[0])\nsys.exit(3)\n")
    done = cli("run", "t.py", "--epochs", "1", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stdout == f"['--epochs', '1'] {tmp_path}\n"
    assert "exit status 3" in done.stderr
    assert read_summary(tmp_path / "tf2npu-run")["exit_status"] == 3


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
def test_uncaught_exception_end_to_end(tmp_path):
    write(tmp_path / "t.py", "raise ValueError('bad input pipeline')\n")
    done = cli("run", "--report-dir", "out", "t.py", cwd=tmp_path)
    assert done.returncode == 1
    assert "Traceback (most recent call last):" in done.stderr
    assert "ValueError: bad input pipeline" in done.stderr
    assert done.stderr.count("File ") == 1
    assert read_summary(tmp_path / "out")["exit_status"] == 1


TF1_SCRIPT = """\
import tensorflow as tf

x = tf.placeholder(tf.float32, shape=[None])
y = tf.reduce_sum(x * 2.0)
with tf.Session() as sess:
    print("value", sess.run(y, feed_dict={x: [1.0, 2.0, 3.5]}))
"""


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
def test_tf1_script_runs_with_stock_sessions_under_no_npu(tmp_path):
    write(tmp_path / "tf1.py", TF1_SCRIPT)
    done = cli("run", "--no-npu", "--option", "precision_mode=allow_mix_precision", "tf1.py",
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "value 13.0" in done.stdout
    data = read_summary(tmp_path / "tf2npu-run")
    assert data["sessions"] == 0 and data["stock_sessions"] == 1
    assert data["options"] == {}  # --no-npu: no NPU session used the option
    assert "--option unused" in done.stderr


NPU_SCRIPT = """\
import tensorflow as tf

x = tf.placeholder(tf.float32, shape=[4, 3])
w = tf.Variable(tf.ones([3, 2]))
loss = tf.reduce_sum(tf.matmul(x, w))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
config = tf.ConfigProto()
custom = config.graph_options.rewrite_options.custom_optimizers.add()
custom.name = "NpuOptimizer"
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        # loss and train in separate runs: in one run a reference variable may be read
        # before or after its update (TF1 semantics), so the printed loss would race.
        print("loss", sess.run(loss, feed_dict={x: [[1.0] * 3] * 4}))
        sess.run(train, feed_dict={x: [[1.0] * 3] * 4})
"""


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
@pytest.mark.parametrize(
    ("flags", "npu_sessions", "stock_sessions", "options"),
    [
        ([], 1, 0, {"precision_mode": "allow_mix_precision"}),
        (["--no-npu"], 0, 1, {}),
    ],
)
def test_npu_run_and_no_npu_run_of_the_same_script(
    tmp_path, flags, npu_sessions, stock_sessions, options
):
    write(tmp_path / "train.py", NPU_SCRIPT)
    done = cli("run", *flags, "--option", "precision_mode=allow_mix_precision", "train.py",
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "loss 24.0"  # the first step, before any update
    data = read_summary(tmp_path / "tf2npu-run")
    assert (data["sessions"], data["stock_sessions"]) == (npu_sessions, stock_sessions)
    assert data["options"] == options
    assert (data["graphs_compiled"] >= 1) == bool(npu_sessions)
    assert data["steps"] == 3  # counted in stock sessions too
    assert data["nonfinite"] is None and data["loss_scale"] is None


def test_summary_shows_non_finite_values_and_loss_scaling():
    text = " ".join(render(SUMMARY).split())
    assert "non-finite values none" in text and "loss scaling" not in text
    failing = {**SUMMARY, "nonfinite": {"first_step": 3, "fetches": ["loss:0", "acc:0"]},
               "loss_scale": {"scale": 256.0, "skipped_steps": 2}}  # fmt: skip
    text = " ".join(render(failing).split())
    assert "non-finite values loss:0, acc:0, first at step 3" in text
    assert "loss scaling scale 256, 2 steps skipped" in text
    warm = {"skipped_steps": 34, "first_scale": 2.0**31, "last_scale": 65536.0}
    warming = {**SUMMARY, "loss_scale": {"scale": 65536.0, "skipped_steps": 35, "warmup": warm}}
    text = " ".join(render(warming).split())
    assert (
        "loss scaling scale 65536, 1 step skipped after a warm-up of 34 steps (scale coming down)"
        in text
    )


def test_help_lists_the_failure_keys(tmp_path):
    done = cli("run", "--help", cwd=tmp_path)
    assert "nonfinite" in done.stdout and "loss_scale" in done.stdout
    assert "precision                   per user op the precision pass judged" in done.stdout


NAN_SCRIPT = """\
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

x = tf.placeholder(tf.float32, shape=[3])
w = tf.Variable([0.3, -1.7, 2.9])
loss = tf.reduce_sum(tf.square(w * x - 0.5))
manager = ExponentialUpdateLossScaleManager(1024, 1000, decr_every_n_nan_or_inf=1, decr_ratio=0.5)
opt = NPULossScaleOptimizer(tf.train.GradientDescentOptimizer(0.1), manager)
train = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for value in (1.0, 1.0, np.inf, 1.0):
        print("loss", sess.run([loss, train], {x: [value, 0.7, -0.45]})[0])
"""


# -- issue 10: rough edges a new user hit -------------------------------------------------------


def test_misspelt_option_gives_the_suggestion_first_in_one_short_line(tmp_path, capsys, no_tf):
    script = write(tmp_path / "t.py", MARKER_SCRIPT)
    assert main(["run", "--option", "precison_mode=x", str(script)]) == 2
    assert capsys.readouterr().err == (
        "tf2npu run: error: unknown NpuOptimizer option 'precison_mode'; did you mean "
        "'precision_mode'? Close names: precision_mode, precision_mode_v2, op_precision_mode "
        "(108 valid names; docs/options.md lists them all)\n"
    )


def test_precision_mode_and_mix_compile_shorthands(tmp_path, no_tf):
    script = write(tmp_path / "t.py", "")
    code = main(["run", "--precision-mode", "allow_mix_precision", "--mix-compile",
                 "--report-dir", str(tmp_path / "r"), "--quiet", str(script)])  # fmt: skip
    assert code == 0
    assert dict(runtime.current().overrides) == {
        "precision_mode": "allow_mix_precision",
        "mix_compile_mode": True,
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--precision-mode", "fast"],
         "--precision-mode fast: not a valid value; use one of: 'force_fp32'"),
        (["--precision-mode", "force_fp16", "--option", "precision_mode=force_fp32"],
         "--precision-mode force_fp16 contradicts --option precision_mode=force_fp32; give "
         "precision_mode once"),
    ],
)  # fmt: skip
def test_shorthand_errors(tmp_path, capsys, no_tf, argv, message):
    script = write(tmp_path / "t.py", MARKER_SCRIPT)
    assert main(["run", *argv, str(script)]) == 2
    assert message in capsys.readouterr().err
    assert not no_tf and not (tmp_path / "ran.marker").exists()


def test_default_report_folder_is_named_in_the_summary(tmp_path, monkeypatch, capsys, no_tf):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "t.py", "")
    assert main(["run", "t.py"]) == 0
    err = capsys.readouterr().err
    assert err.endswith(
        f"Summary: {tmp_path / 'tf2npu-run' / 'run_summary.json'}\n"
        "Report folder: ./tf2npu-run (the default; choose another with --report-dir DIR)\n"
    )
    assert main(["run", "--report-dir", "mine", "t.py"]) == 0
    assert "Report folder" not in capsys.readouterr().err  # the user chose it


def test_summary_piped_is_not_wrapped_at_80_columns(tmp_path, capsys, no_tf):
    script = write(tmp_path / "t.py", "")
    options = [f"--option=dump_path=/a/rather/long/path/number/{i}/for/the/dumps" for i in range(3)]
    assert main(["run", "--no-npu", *options, "--report-dir", str(tmp_path), str(script)]) == 0
    unused = [line for line in capsys.readouterr().err.splitlines() if "--option unused" in line]
    # One line of ~190 characters (rich would cut it at 80 off a terminal).
    assert len(unused) == 1
    listed = ", ".join(o.removeprefix("--option=") for o in options)
    assert unused[0].startswith("--option unused ") and unused[0].endswith(f" {listed} (--no-npu)")


@pytest.mark.parametrize(
    ("given", "argv", "after"),
    [(None, [], "1"), (None, ["--verbose"], None), ("0", [], "0"), ("3", ["--verbose"], "3")],
)
def test_tf_start_up_lines_hidden_unless_verbose(tmp_path, monkeypatch, no_tf, given, argv, after):
    """TF reads TF_CPP_MIN_LOG_LEVEL at import: 1 hides its INFO start-up lines; a value the
    user set stays."""
    if given is None:
        monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    else:
        monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", given)
    script = write(tmp_path / "t.py", "")
    assert main(["run", *argv, "--quiet", "--report-dir", str(tmp_path), str(script)]) == 0
    assert os.environ.get("TF_CPP_MIN_LOG_LEVEL") == after


HAND_MIGRATED_SCRIPT = """\
import tensorflow as tf
from npu_bridge.npu_init import *
from npu_bridge.estimator import npu_ops
from hccl.manage.api import get_rank_id, get_rank_size
from hccl.split.api import set_split_strategy_by_idx

set_split_strategy_by_idx([2, 4])
tf.set_random_seed(1)
x = tf.placeholder(tf.float32, [None, 3])
keep_prob = tf.placeholder(tf.float32)  # no shape, as hand-migrated scripts write it
h = npu_ops.dropout(tf.layers.dense(x, 4), keep_prob)
loss = tf.reduce_mean(tf.square(tf.layers.dense(h, 1)))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["auto_tune_mode"].s = tf.compat.as_bytes("RL,GA")
custom_op.parameter_map["enable_auto_mix_precision"].b = False
custom_op.parameter_map["sump_mode"].s = tf.compat.as_bytes("output")
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    feed = {x: [[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], keep_prob: 1.0}
    for _ in range(3):
        print("loss %.6f" % sess.run(loss, feed), get_rank_id(), get_rank_size())
        sess.run(train, feed)
"""


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
def test_a_hand_migrated_script_runs_and_reports_unknown_options(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")  # the two runs are compared bit for bit
    write(tmp_path / "train.py", HAND_MIGRATED_SCRIPT)
    npu = cli("run", "--option", "precision_mode=force_fp32", "--report-dir", "npu", "train.py",
              cwd=tmp_path)  # fmt: skip
    assert npu.returncode == 0, npu.stderr
    assert "parameter_map['sump_mode'] is not an option of the adapter (did you mean " \
        "'dump_mode'?)" in npu.stderr  # fmt: skip
    assert npu.stderr.count("parameter_map['sump_mode']") == 1
    data = read_summary(tmp_path / "npu")
    assert data["options_unknown"] == ["enable_auto_mix_precision", "sump_mode"]
    assert data["options_without_effect"] == ["auto_tune_mode"]
    assert data["steps"] == 3
    stock = cli("run", "--no-npu", "--report-dir", "stock", "train.py", cwd=tmp_path)
    assert stock.returncode == 0, stock.stderr
    assert npu.stdout == stock.stdout  # force_fp32 computes what stock TensorFlow computes
    assert npu.stdout.splitlines()[0].endswith(" 0 1")


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
@pytest.mark.parametrize(("argv", "shown"), [([], False), (["--verbose"], True)])
def test_tf_start_up_lines_end_to_end(tmp_path, argv, shown):
    write(tmp_path / "t.py", "import tensorflow as tf\nprint(tf.constant(1.0).shape)\n")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [str(EXE), "run", "--quiet", *argv, "t.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "()\n")
    # cpu_feature_guard (AVX2/FMA) and oneDNN notices are INFO lines of TF's C++ logging.
    assert (" I tensorflow/" in done.stderr) is shown


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
@pytest.mark.parametrize("flags", [[], ["--no-npu"]])
def test_a_loss_that_turns_inf_is_reported_and_the_status_kept(tmp_path, flags):
    write(tmp_path / "train.py", NAN_SCRIPT)
    done = cli("run", *flags, "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "loss inf" in done.stdout
    data = read_summary(tmp_path / "tf2npu-run")
    assert data["steps"] == 4
    assert data["nonfinite"]["first_step"] == 3 and len(data["nonfinite"]["fetches"]) == 1
    assert data["loss_scale"] == {"scale": 512.0, "skipped_steps": 1, "warmup": None}
    fetch = data["nonfinite"]["fetches"][0]
    assert f"{fetch!r} is +Inf in training step 3" in done.stderr
    assert "first at step 3" in done.stderr and "1 step skipped" in done.stderr


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
def test_strict_options_makes_an_unknown_key_an_error(tmp_path):
    write(tmp_path / "train.py", HAND_MIGRATED_SCRIPT)
    done = cli("run", "--strict-options", "train.py", cwd=tmp_path)
    # A user error found while the script runs: one message at the script's line, exit 2.
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "unknown NpuOptimizer option 'enable_auto_mix_precision'" in done.stderr
    assert read_summary(tmp_path / "tf2npu-run")["options_unknown"] == []


BAD_CONFIG_SCRIPT = """\
import tensorflow as tf
from npu_bridge.npu_init import *
x = tf.constant(1.0) * 2
config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map[{key!r}].s = tf.compat.as_bytes({value!r})
with tf.Session(config=config) as sess:
    print(sess.run(x))
"""


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
@pytest.mark.parametrize(
    ("key", "value", "line", "message"),
    [
        ("fusion_switch_file", "/nowhere/switch.cfg", 9,
         "fusion_switch_file = '/nowhere/switch.cfg': cannot read the file (No such file or "
         "directory); give the path of an existing JSON file"),
        ("precision_mode", "fp99", 8,
         "option 'precision_mode' = 'fp99' is not valid; use one of: 'force_fp32'"),
    ],
)  # fmt: skip
def test_a_bad_config_in_the_script_is_one_message_at_its_line(tmp_path, key, value, line, message):
    """Issue 9: an option the script sets itself can only be checked when it is used; then it is
    one message naming the script's line, exit 2, and no traceback."""
    script = write(tmp_path / "t.py", BAD_CONFIG_SCRIPT.format(key=key, value=value))
    done = cli("run", "t.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"tf2npu run: error: {script}:{line}: {message}" in done.stderr
    assert read_summary(tmp_path / "tf2npu-run")["exit_status"] == 2


ENV_SCRIPT = """\
import os
names = ("RANK_SIZE", "RANK_ID", "DEVICE_ID", "ASCEND_DEVICE_ID", "DEVICE_INDEX")
print(" ".join(os.environ[n] for n in names))
"""
JOB_VARIABLES = ("RANK_SIZE", "RANK_ID", "POD_NAME", "DEVICE_ID", "ASCEND_DEVICE_ID",
                 "DEVICE_INDEX")  # fmt: skip


@pytest.mark.parametrize(
    ("given", "printed", "added"),
    [
        ({}, "1 0 0 0 0", {"RANK_SIZE": "1", "RANK_ID": "0", "ASCEND_DEVICE_ID": "0",
                           "DEVICE_ID": "0", "DEVICE_INDEX": "0"}),
        ({"DEVICE_ID": "5", "RANK_SIZE": "1", "RANK_ID": "0"}, "1 0 5 5 5",
         {"ASCEND_DEVICE_ID": "5", "DEVICE_INDEX": "5"}),
    ],
)  # fmt: skip
def test_the_script_gets_a_one_device_job_environment(
    tmp_path, monkeypatch, capsys, no_tf, given, printed, added
):
    """Real NPU scripts read os.environ["RANK_SIZE"] and friends, which their launch scripts
    always export; unset ones get a one-device job's values for the script's lifetime."""
    for name in JOB_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    script = write(tmp_path / "t.py", ENV_SCRIPT)
    assert main(["run", "--report-dir", str(tmp_path / "r"), str(script)]) == 0
    out, err = capsys.readouterr()
    assert out == printed + "\n"
    shown = " ".join(f"{k}={v}" for k, v in added.items())
    assert f"tf2npu run: one-device job environment: {shown} (were unset)\n" in err
    assert read_summary(tmp_path / "r")["job_environment"] == added
    assert not any(name in os.environ for name in added)  # restored after the script


def test_a_user_error_in_a_module_beside_the_script_names_that_module_line(
    tmp_path, monkeypatch, capsys, no_tf
):
    """ModelZoo scripts build their model in modules beside them (ops.py): a user error raised
    by a call there names that line, not the script's line that led to it."""
    write(tmp_path / "ops.py", "from tf2npu.errors import ConfigError\n\n\n"
                               "def layer():\n    raise ConfigError('bad layer')\n")  # fmt: skip
    # Imported through a "./" sys.path entry, as PRSR does: the path is shown normalised.
    script = write(
        tmp_path / "t.py", "import sys\nsys.path.insert(0, './')\nimport ops\nops.layer()\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--report-dir", str(tmp_path / "r"), str(script)]) == 2
    err = capsys.readouterr().err
    assert f"tf2npu run: error: {tmp_path / 'ops.py'}:5: bad layer\n" in err


def test_a_user_error_raised_by_a_copy_of_precision_tool_names_the_script_line(
    tmp_path, capsys, no_tf
):
    """A library beside the script (the user's copy of precision_tool) is not the user's code."""
    write(tmp_path / "precision_tool" / "__init__.py", "")
    write(tmp_path / "precision_tool" / "tf_config.py", "from tf2npu.errors import ConfigError\n"
                                                         "raise ConfigError('bad tool')\n")  # fmt: skip
    script = write(tmp_path / "t.py", "x = 1\nimport precision_tool.tf_config\n")
    assert main(["run", "--report-dir", str(tmp_path / "r"), str(script)]) == 2
    assert f"tf2npu run: error: {script}:2: bad tool\n" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("TF2NPU_RECORD", "yes", "TF2NPU_RECORD='yes': use 1 to record the run"),
        ("TF2NPU_MAX_STEPS", "-3", "TF2NPU_MAX_STEPS='-3': give the number of training steps"),
        ("TF2NPU_DROPOUT_OFF", "2", "TF2NPU_DROPOUT_OFF='2': use 1 to switch every dropout off"),
    ],
)
def test_bad_trial_variables_are_usage_errors_before_the_script_runs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    message: str,
) -> None:
    script = tmp_path / "t.py"
    script.write_text("raise SystemExit(5)\n", encoding="utf-8")
    monkeypatch.setenv(variable, value)
    assert main(["run", "--report-dir", str(tmp_path / "r"), str(script)]) == 2
    assert message in capsys.readouterr().err


ESTIMATOR_SCRIPT = """\
import numpy as np
import tensorflow as tf
tf.logging.set_verbosity(tf.logging.INFO)
from npu_bridge.npu_init import *


def input_fn():
    x = np.random.RandomState(0).randn(64, 4).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(8, drop_remainder=True)


def model_fn(features, labels, mode):
    loss = tf.losses.mean_squared_error(labels, tf.layers.dense(features, 1))
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return NPUEstimatorSpec(mode, loss=loss, train_op=train_op)


config = NPURunConfig(model_dir="model", save_checkpoints_steps=100, log_step_count_steps=1)
NPUEstimator(model_fn, config=config).train(input_fn, max_steps=30)
tf.logging.info("my own line")
"""


@pytest.mark.tf
@pytest.mark.slow
@needs_runtime
def test_an_estimator_run_keeps_tensorflows_noise_out_unless_verbose(tmp_path):
    write(tmp_path / "est.py", ESTIMATOR_SCRIPT)
    env = {**os.environ, "JOB_ID": "1"}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    runs = {}
    for flags in ([], ["--verbose"]):
        done = subprocess.run(
            [str(EXE), "run", "--quiet", *flags, "est.py"],
            capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        runs[bool(flags)] = done.stderr.splitlines()
        (tmp_path / "model").rename(tmp_path / f"model{len(runs)}")
    quiet, verbose = runs[False], runs[True]
    assert "INFO:tensorflow:my own line" in quiet  # the script's own line stays
    assert not [line for line in quiet if "parameter_map" in line or "step = " in line]
    assert len(quiet) <= 10, quiet  # was 370 more (config dumps, loss every step)
    assert any("parameter_map" in line for line in verbose)
    assert sum("step = " in line for line in verbose) >= 30
