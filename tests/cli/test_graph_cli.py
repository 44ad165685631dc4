"""``tf2npu graph inspect`` end to end: usage errors, option sources, outputs, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tf2npu.cli.main import main

pytestmark = pytest.mark.filterwarnings("ignore:`tf.layers.dense` is deprecated:UserWarning")


def inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["graph", "inspect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- usage and option errors (no TensorFlow needed: they fail before the graph is parsed) --------


def test_missing_graph_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = inspect(capsys, str(tmp_path / "nope.pbtxt"))
    assert (code, out) == (2, "")
    assert err.startswith("tf2npu graph: error: graph file ")
    assert "nope.pbtxt': cannot read it (No such file or directory)" in err


def test_bad_suffix(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = inspect(capsys, str(tmp_path / "model.onnx"))
    assert code == 2
    assert "unknown suffix '.onnx'; expected .pb (binary GraphDef)" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--option", "precision_mode=fast"],
         "option 'precision_mode' = 'fast' is not valid; use one of: 'force_fp32'"),
        (["--precision-mode", "fast"],
         "option 'precision_mode' = 'fast' is not valid; use one of: 'force_fp32'"),
        (["--option", "mix_compile_mode=maybe"],
         "--option mix_compile_mode=maybe: 'mix_compile_mode' is a bool; use "
         "mix_compile_mode=true or mix_compile_mode=false"),
        (["--option", "precison_mode=force_fp32"],
         "unknown NpuOptimizer option 'precison_mode'"),
        (["--option", "precision_mode"], "--option 'precision_mode': expected KEY=VALUE"),
        (["--option", "mix_compile_mode=false", "--mix-compile"],
         "--mix-compile contradicts --option mix_compile_mode=false; give mix_compile_mode once"),
        (["--mix-compile", "--option", "iterations_per_loop=10"],
         "option 'iterations_per_loop' = 10"),
        (["--top", "0"], "--top 0: give a number of reasons >= 1"),
    ],
)  # fmt: skip
def test_bad_options_name_option_value_and_fix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    code, out, err = inspect(capsys, str(tmp_path / "model.pbtxt"), *argv)
    assert (code, out) == (2, "")
    assert message in err


def test_unknown_option_suggests_the_close_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, _, err = inspect(capsys, str(tmp_path / "m.pbtxt"), "--option", "precison_mode=x")
    assert "did you mean 'precision_mode'?" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('["precision_mode"]', "expected a JSON object of NpuOptimizer parameter_map keys to "
                               "values, e.g. {\"precision_mode\""),
        ('{"precison_mode": "force_fp32"}', "unknown NpuOptimizer option 'precison_mode'"),
        ('{"mix_compile_mode": "yes"}', "key 'mix_compile_mode': option 'mix_compile_mode' = "
                                         "'yes' (str) is not a bool; give a bool"),
        ('{"iterations_per_loop": null}', "key 'iterations_per_loop' is null; leave the key out"),
        ('{"precision_mode": "force_fp32",}', "invalid JSON at line 1, column 33"),
    ],
)  # fmt: skip
def test_config_from_errors_name_file_key_and_fix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, message: str
) -> None:
    config = tmp_path / "npu.json"
    config.write_text(content)
    code, _, err = inspect(capsys, str(tmp_path / "m.pbtxt"), "--config-from", str(config))
    assert code == 2
    assert str(config) in err
    assert message in err


def test_config_from_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = inspect(capsys, "m.pbtxt", "--config-from", str(tmp_path / "none.json"))
    assert code == 2
    assert "--config-from = " in err and "cannot read the file" in err


def test_option_sources_merge_in_order(tmp_path: Path) -> None:
    from tf2npu.cli.graph import inspect_options
    from tf2npu.cli.main import build_parser

    config = tmp_path / "npu.json"
    config.write_text('{"precision_mode": "force_fp32", "iterations_per_loop": 1, '
                      '"enable_dump_debug": false, "op_debug_level": 0}')  # fmt: skip
    args = build_parser().parse_args(
        ["graph", "inspect", "g.pbtxt", "--config-from", str(config),
         "--option", "precision_mode=force_fp16", "--mix-compile"]
    )  # fmt: skip
    options = inspect_options(args, {"PRINT_MODEL": "1"})
    assert options.precision_mode == "force_fp16"  # --option beats --config-from
    assert options.mix_compile_mode is True
    assert options.env.print_model is True
    assert options.no_effect == ("op_debug_level",)


def test_graph_without_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph"]) == 2
    assert capsys.readouterr().err == (
        "tf2npu graph: error: give a subcommand: tf2npu graph inspect GRAPH (a .pb, .pbtxt or "
        ".meta file); `tf2npu graph inspect --help` lists its options\n"
    )


# -- end to end on TF-built graphs ---------------------------------------------------------------


def save(graph_def: object, path: Path) -> Path:
    from google.protobuf import text_format

    path.write_text(text_format.MessageToString(graph_def))  # type: ignore[arg-type]
    return path


@pytest.fixture
def mlp(tmp_path: Path) -> Path:
    """A two-layer MLP trained by gradient descent, a py_func and a string op on the loss."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    with tf.Graph().as_default() as g:
        x = tf1.placeholder(tf.float32, [8, 4], name="x")
        y = tf1.placeholder(tf.float32, [8, 2], name="y")
        hidden = tf1.layers.dense(x, 16, activation=tf.nn.relu, name="d1")
        out = tf1.layers.dense(hidden, 2, name="d2")
        loss = tf.reduce_mean(tf.square(out - y), name="loss")
        tf1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        tf.strings.as_string(loss, name="loss_str")
        tf1.py_func(lambda a: a, [loss], tf.float32, name="pyf")
    return save(g.as_graph_def(), tmp_path / "mlp.pbtxt")


def host(data: dict[str, object]) -> dict[str, str]:
    return {h["name"]: h["reason"] for h in data["host_ops"]}  # type: ignore[attr-defined]


@pytest.mark.tf
@pytest.mark.slow
def test_mlp_full_offload_json(capsys: pytest.CaptureFixture[str], mlp: Path) -> None:
    code, out, _ = inspect(capsys, str(mlp), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["schema_version"] == 2
    assert data["mode"] == {"mix_compile_mode": False, "precision_mode": "allow_fp32_to_fp16"}
    assert data["nodes"] == data["device_nodes"] + data["host_nodes"]
    assert [g["name"] for g in data["geops"]] == ["GeOp1_0"]
    assert data["geops"][0]["nodes"] == data["device_nodes"]
    hosts = host(data)
    assert hosts["pyf"] == "not_in_library"
    assert hosts["x"] == hosts["y"] == "feed"
    assert "loss_str" not in hosts  # a gray op is a device op in full offload
    assert "d1/MatMul" not in hosts
    assert data["fusions"]["matmul_biasadd"] >= 1
    assert data["errors"] == []
    assert set(data["pass_seconds"]) == {
        "device_strings", "placement", "precision", "fusion", "inject_faults", "partition",
        "lowering",
    }  # fmt: skip


@pytest.mark.tf
@pytest.mark.slow
def test_mlp_mixed_compute_json(capsys: pytest.CaptureFixture[str], mlp: Path) -> None:
    code, out, _ = inspect(
        capsys, str(mlp), "--json", "--mix-compile", "--precision-mode", "allow_mix_precision"
    )
    assert code == 0
    data = json.loads(out)
    assert data["mode"]["mix_compile_mode"] is True
    hosts = host(data)
    assert hosts["loss_str"] == "gray_op"
    assert hosts["pyf"] == "not_in_library"
    assert data["casts_inserted"] > 0
    assert data["precision"]["d1/MatMul"]["after"] == "float16"
    assert data["memcpy_edges"] >= 1


@pytest.mark.tf
@pytest.mark.slow
def test_terminal_summary_dump_dir_and_html(
    capsys: pytest.CaptureFixture[str], mlp: Path, tmp_path: Path
) -> None:
    dumps, page = tmp_path / "dumps", tmp_path / "out" / "p.html"
    code, out, _ = inspect(capsys, str(mlp), "--mix-compile", "--dump-dir", str(dumps),
                           "--html", str(page))  # fmt: skip
    assert code == 0
    assert out.startswith("tf2npu graph inspect ")
    assert "not_in_library" in out and f"Dumps: {dumps}" in out
    # Piped (captured), the console does not cut lines at 80 columns.
    timing = [line for line in out.splitlines() if line.startswith("Pass seconds: ")]
    assert len(timing) == 1 and len(timing[0]) > 80 and timing[0].endswith(" s")
    # ... nor pads them with blanks to its 1000 columns (issue 24).
    assert [line for line in out.splitlines() if line != line.rstrip()] == []
    names = sorted(p.name for p in dumps.iterdir())
    assert names == sorted(
        [f"{i:02d}_{name}_{when}.pbtxt"
         for i, name in enumerate(["device_strings", "placement", "precision", "fusion",
                                   "inject_faults", "partition", "lowering"], 1)
         for when in ("before", "after")]
        + ["AfterSubGraph_1.pbtxt", "AfterSubGraph_GeOp1_0.pbtxt", "BeforeSubGraph_1.pbtxt",
           "check_result.tf.json", "partition_report.txt", "summary.json"]
    )  # fmt: skip
    check = json.loads((dumps / "check_result.tf.json").read_text())
    assert {"name": "pyf", "type": "PyFunc", "is_support": False,
            "not_support_reason": {"code": 1, "message": "PyFunc: not in the device op library"},
            } in check["op"]  # fmt: skip
    assert "GeOp1_0" in page.read_text()


@pytest.mark.tf
@pytest.mark.slow
def test_print_model_writes_into_the_working_directory(
    capsys: pytest.CaptureFixture[str], mlp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("PRINT_MODEL", "1")
    code, _, _ = inspect(capsys, str(mlp), "--json")
    assert code == 0
    assert sorted(p.name for p in work.iterdir()) == [
        "AfterSubGraph_1.pbtxt", "AfterSubGraph_GeOp1_0.pbtxt", "BeforeSubGraph_1.pbtxt",
    ]  # fmt: skip


@pytest.mark.tf
@pytest.mark.slow
def test_engine_errors_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A lookup pushed to the host by a string edge reads a table initialised on the device."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    with tf.Graph().as_default() as g:
        init = tf.lookup.KeyValueTensorInitializer(
            tf.constant(["a", "b"]), tf.constant([0, 1], tf.int64)
        )
        table = tf.lookup.StaticHashTable(init, -1)
        key = tf1.py_func(lambda: b"a", [], tf.string, name="key")
        table.lookup(key, name="lookup")
    path = save(g.as_graph_def(), tmp_path / "table.pbtxt")
    code, out, _ = inspect(capsys, str(path), "--json", "--option", "iterations_per_loop=2")
    assert code == 1
    errors = json.loads(out)["errors"]
    assert [(e["code"], e["node"]) for e in errors] == [("table_split", "hash_table")]
    assert errors[0]["fix"].startswith("keep the table ops together")


# -- variable races (tf2npu.graph.lint.races over the graph file's sinks) --------------------


def _race_graph(path: Path, *, ordered: bool) -> Path:
    tf = pytest.importorskip("tensorflow").compat.v1
    graph = tf.Graph()
    with graph.as_default():
        gs = tf.get_variable("global_step", [], tf.int64, tf.zeros_initializer(),
                             trainable=False, use_resource=True)  # fmt: skip
        w = tf.get_variable("w", [2, 1], use_resource=True)
        lr = tf.train.polynomial_decay(0.1, gs, 10, 0.0)
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.ones([2, 2]), w) - 1.0))
        train = tf.train.GradientDescentOptimizer(lr).minimize(loss)
        if ordered:
            with tf.control_dependencies([train]):
                gs.assign(gs + 1)
        else:
            tf.group(train, gs.assign(gs + 1))
        tf.global_variables_initializer()
    tf.io.write_graph(graph.as_graph_def(), str(path.parent), path.name)
    return path


def test_a_variable_race_is_a_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    graph = _race_graph(tmp_path / "race.pbtxt", ordered=False)
    code, out, _ = inspect(capsys, str(graph), "--json")
    warnings = [w for w in json.loads(out)["warnings"] if w["code"] == "variable_race"]
    assert code == 0
    assert [w["node"] for w in warnings] == ["PolynomialDecay/Cast_2/ReadVariableOp"]
    assert warnings[0]["message"].startswith(
        "variable 'global_step' is read by 'PolynomialDecay/Cast_2/ReadVariableOp' "
        "(ReadVariableOp) and assigned by 'AssignVariableOp' (AssignVariableOp) in the same run"
    )
    assert "tf.control_dependencies" in warnings[0]["fix"]


def test_an_ordered_write_is_no_race(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    graph = _race_graph(tmp_path / "ordered.pbtxt", ordered=True)
    code, out, _ = inspect(capsys, str(graph), "--json")
    assert code == 0
    assert [w for w in json.loads(out)["warnings"] if w["code"] == "variable_race"] == []
