"""Tensor dumps: NPU (enable_dump), overflow (enable_dump_debug) and golden (--no-npu --dump)."""

from __future__ import annotations

import math
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts import gegraph
from tf2npu.artifacts.opdebug import read_raw_record, read_sidecar

pytestmark = pytest.mark.tf

X = np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 4)


def _model(seed: int = 3) -> dict[str, Any]:
    """A dense layer (MatMul + BiasAdd: fused by the engine), ReLU, a loss and an SGD step."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="x")
        w = tf.compat.v1.get_variable(
            "w", [4, 3], initializer=tf.compat.v1.random_normal_initializer(seed=seed)
        )
        b = tf.compat.v1.get_variable("b", [3], initializer=tf.compat.v1.ones_initializer())
        y = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w, name="mm"), b, name="ba"), name="y")
        loss = tf.reduce_mean(tf.square(y - 0.25), name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    return {"graph": graph, "x": x, "loss": loss, "train": train, "init": init, "w": w}


def _train(config: Any, steps: int = 3) -> tuple[list[float], Any]:
    model = _model()
    with tf.compat.v1.Session(graph=model["graph"], config=config) as sess:
        sess.run(model["init"])
        losses = [
            float(sess.run([model["loss"], model["train"]], {model["x"]: X})[0])
            for _ in range(steps)
        ]
        return losses, sess.run(model["w"])


def _flush() -> None:
    from tf2npu.runtime import context

    context().close()


def _npu_steps(root: Path) -> list[dumpfile.StepDir]:
    return [d for d in dumpfile.find_step_dirs(root) if d.kind == "npu"]


# -- golden -------------------------------------------------------------------------------------


def test_a_golden_dump_holds_every_op_output_per_step(tmp_path: Path) -> None:
    from tf2npu.runtime import context
    from tf2npu.runtime.dump import golden_dump

    ctx = context()
    ctx.extra_instruments.append(golden_dump(tmp_path, ctx, steps="1"))
    model = _model()
    with tf.compat.v1.Session(graph=model["graph"]) as sess:
        sess.run(model["init"])
        values = [sess.run([model["loss"], model["train"]], {model["x"]: X}) for _ in range(3)]
    _flush()
    # <run signature>/<step>: the initialiser ran once (no step 1), the training step 3 times
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob("*/*")) == ["2/1"]
    files = {dumpfile.parse_golden(p.name): p for p in (tmp_path / "2" / "1").iterdir()}
    by_name = {(f.op_name, f.index): p for f, p in files.items() if f is not None}
    assert np.load(by_name[("loss", 0)]) == np.float32(values[1][0])
    assert ("x", 0) not in by_name  # fed: not computed by the run
    assert ("w", 0) not in by_name  # a handle: the value is dumped where it is read
    reads = [k for k in by_name if "ReadVariableOp" in k[0] and np.load(by_name[k]).size == 12]
    assert reads and np.load(by_name[reads[0]]).shape == (4, 3), sorted(by_name)


def test_dumping_changes_no_value(tmp_path: Path) -> None:
    from tf2npu.runtime import context
    from tf2npu.runtime.dump import golden_dump

    plain = _train(None)
    ctx = context()
    ctx.extra_instruments.append(golden_dump(tmp_path / "golden", ctx))
    golden = _train(None)
    npu = npu_config(precision_mode="must_keep_origin_dtype")
    npu_plain = _train(npu)
    dumped = npu_config(
        precision_mode="must_keep_origin_dtype",
        enable_dump=True,
        dump_path=str(tmp_path),
        dump_mode="all",
    )
    npu_dumped = _train(dumped)
    _flush()
    assert golden[0] == plain[0] and np.array_equal(golden[1], plain[1])
    assert npu_dumped[0] == npu_plain[0] and np.array_equal(npu_dumped[1], npu_plain[1])
    assert _npu_steps(tmp_path)


# -- NPU ----------------------------------------------------------------------------------------


def test_an_npu_dump_has_the_device_layout_and_maps_fused_ops(tmp_path: Path) -> None:
    config = npu_config(
        precision_mode="must_keep_origin_dtype",
        enable_dump=True,
        dump_path=str(tmp_path),
        dump_step="0|2",
        dump_mode="output",
    )
    _train(config, steps=3)
    _flush()
    [time_dir] = [p for p in tmp_path.iterdir() if p.name != dumpfile.GRAPH_DIR]
    assert len(time_dir.name) == 14 and time_dir.name.isdigit()
    steps = _npu_steps(tmp_path)
    # msaccucmp's batch mode takes every entry of <model_id>/ for a step: no JSON there
    assert {p.name for d in steps for p in Path(d.path).parent.iterdir()} == {"0", "2"}
    assert {d.step for d in steps} == {0, 2}
    train = [d for d in steps if any("BiasAdd" in f or "ba" in f for f in d.files())]
    assert train, [d.files() for d in steps]
    step = train[0]
    assert step.device_id == 0 and step.graph_json is not None
    assert step.graph_json == tmp_path / "graph" / time_dir.name / f"{step.model_name}.json"
    [graph] = gegraph.load(step.graph_json)
    assert graph.name == step.model_name
    fused = [op for op in graph.ops if op.pass_name]
    # MatMul + BiasAdd + ReLU become one op, standing for all three and carrying y:0
    assert [set(op.original_op_names) for op in fused] == [{"mm", "ba", "y"}]
    assert [d.origin_name for d in fused[0].output_desc] == ["y"]
    tensors = list(dumpfile.iter_npu_tensors(step))
    assert {t.kind for t in tensors} == {"output"} and all(t.raw for t in tensors)
    assert {t.name.task_id for t in tensors} <= {op.id for op in graph.ops}
    # one raw file per op: OpType.op_name.task_id.stream_id.timestamp, no extension
    assert all(dumpfile.parse_npu(f).ext == "raw" for f in step.files())  # type: ignore[union-attr]
    assert len(step.files()) == len({t.name.task_id for t in tensors})


@pytest.mark.parametrize("npu", [True, False])
def test_a_step_dump_step_leaves_out_fetches_nothing_extra(tmp_path: Path, npu: bool) -> None:
    from tf2npu.runtime import context, intercept
    from tf2npu.runtime.dump import golden_dump

    fetched: list[int] = []
    real = intercept._saved["_do_run"]  # BaseSession's own, under the hook's wrapper

    def counting(self: Any, handle: Any, targets: Any, fetches: Any, *rest: Any) -> Any:
        fetched.append(len(fetches))
        return real(self, handle, targets, fetches, *rest)

    if npu:
        config = npu_config(enable_dump=True, dump_path=str(tmp_path), dump_step="1")
    else:
        config = None
        ctx = context()
        ctx.extra_instruments.append(golden_dump(tmp_path, ctx, "1"))
    model = _model()
    with tf.compat.v1.Session(graph=model["graph"], config=config) as sess:
        sess.run(model["init"])
        intercept._saved["_do_run"] = counting  # undone here: the hook's teardown clears _saved
        try:
            for _ in range(3):
                sess.run([model["loss"], model["train"]], {model["x"]: X})
        finally:
            intercept._saved["_do_run"] = real
    _flush()
    runs = fetched[-3:]  # the NPU session's inner session, or the stock session itself
    assert runs[0] == runs[2] == 1 and runs[1] > 1  # only step 1 fetches the dumped tensors
    assert {d.step for d in dumpfile.find_step_dirs(tmp_path)} == {1}


def test_stats_mode_writes_one_csv_per_op(tmp_path: Path) -> None:
    config = npu_config(
        precision_mode="must_keep_origin_dtype",
        enable_dump=True,
        dump_path=str(tmp_path),
        dump_step="0",
        dump_mode="all",
        dump_data="stats",
    )
    _train(config, steps=1)
    _flush()
    files = [Path(d.path) / f for d in _npu_steps(tmp_path) for f in d.files()]
    assert files and all(f.suffix == ".csv" for f in files)
    rows = [row for f in files for row in dumpfile.read_stats_csv(f)]
    assert {row.kind for row in rows} == {"input", "output"}
    from tf2npu.runtime import context
    from tf2npu.runtime.dump import dump_figures, measure

    [figures] = dump_figures(context())  # the run summary's record of what measured
    assert figures["statistics"] == measure.method().label


def _dumped(root: Path) -> dict[tuple[str, str, int, str, int], Any]:
    """(op type, op name, task, input/output, index) -> that tensor (``.load()`` reads it)."""
    found: dict[tuple[str, str, int, str, int], Any] = {}
    for step in _npu_steps(root):
        for tensor in dumpfile.iter_npu_tensors(step):
            key = (tensor.name.op_type, tensor.name.op_name, tensor.name.task_id)
            found[(*key, tensor.kind, tensor.index)] = tensor
    return found


@pytest.mark.parametrize("precision", ["must_keep_origin_dtype", "force_fp16"])
def test_stats_rows_are_the_statistics_of_the_tensors_a_tensor_dump_writes(
    tmp_path: Path, precision: str
) -> None:
    for data in ("tensor", "stats"):
        (tmp_path / data).mkdir()
        config = npu_config(
            precision_mode=precision,
            enable_dump=True,
            dump_path=str(tmp_path / data),
            dump_step="0",
            dump_mode="all",
            dump_data=data,
        )
        _train(config, steps=1)
    _flush()
    tensors = _dumped(tmp_path / "tensor")
    rows = {}
    for step in _npu_steps(tmp_path / "stats"):
        for name in step.files():
            base = dumpfile.parse_npu(name).name  # type: ignore[union-attr]
            for row in dumpfile.read_stats_csv(Path(step.path) / name):
                rows[(base.op_type, base.op_name, base.task_id, row.kind, row.index)] = row
    assert rows.keys() == tensors.keys()
    if precision == "force_fp16":  # float16 tensors go through the run's statistics too
        assert any(row.dtype == "DT_FLOAT16" for row in rows.values())
    for key, row in rows.items():
        array = tensors[key].load()
        expected = dumpfile.tensor_stats(row.kind, row.index, array)
        # the run sums in float32 (tf2npu.runtime.dump.measure), numpy in float64
        scale = float(np.abs(array.astype(np.float64)).mean()) if array.size else 0.0
        if not math.isnan(expected.mean):
            assert math.isclose(row.mean, expected.mean, rel_tol=0, abs_tol=1e-6 * scale), key
            assert math.isclose(row.l2norm, expected.l2norm, rel_tol=1e-6), key
            row = replace(row, mean=expected.mean, l2norm=expected.l2norm)
        assert row.row() == expected.row(), key


def test_a_run_waits_while_the_writer_holds_more_than_its_backlog(tmp_path: Path) -> None:
    from tf2npu.runtime.dump import DumpWriter

    writer = DumpWriter(tmp_path)
    writer._BACKLOG = 100
    busy = threading.Event()
    with writer.holding([np.zeros(20, np.float32)]):  # 80 bytes, then the writer is busy
        writer._queue.put((busy.wait, ()))
    entered = threading.Event()

    def second_run() -> None:
        with writer.holding([np.zeros(10, np.float32)]):  # 40 more: over 100
            entered.set()

    thread = threading.Thread(target=second_run)
    thread.start()
    assert not entered.wait(0.3)
    busy.set()
    assert entered.wait(10)
    thread.join()
    with writer.holding([np.zeros(1000, np.float32)]):  # alone, a run over 100 bytes gets in
        pass
    writer.flush()
    assert writer._backlog == 0


def test_a_failed_write_is_raised_by_flush_and_the_writer_goes_on(tmp_path: Path) -> None:
    from tf2npu.runtime.dump import DumpWriter

    writer = DumpWriter(tmp_path)

    def fail() -> None:
        raise ValueError("boom")

    writer._queue.put((fail, ()))
    with pytest.raises(OSError, match=r"writing the dump under .* failed: boom"):
        writer.flush()
    writer.put_golden(1, 0, [("op", 0)], [np.ones(2, np.float32)], 1700000000000000)
    writer.flush()
    assert (writer.files, writer.bytes) == (1, 8)


def test_dump_layer_keeps_the_named_ops(tmp_path: Path) -> None:
    config = npu_config(
        precision_mode="must_keep_origin_dtype",
        enable_dump=True,
        dump_path=str(tmp_path),
        dump_layer="y loss",
    )
    _train(config, steps=1)
    _flush()
    ops = {
        dumpfile.parse_npu(f).name.op_name  # type: ignore[union-attr]
        for d in _npu_steps(tmp_path)
        for f in d.files()
    }
    assert ops == {"y__tf2npu_fused_matmul", "loss"}  # the fused op stands for y


def test_an_overflow_is_recorded_with_the_op_and_its_tensors(tmp_path: Path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
        half = tf.cast(x, tf.float16, name="half")
        big = tf.multiply(half, tf.constant(1000.0, tf.float16), name="big")
        out = tf.cast(big, tf.float32, name="out")
    config = npu_config(
        precision_mode="must_keep_origin_dtype",
        enable_dump_debug=True,
        dump_path=str(tmp_path),
    )
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        sess.run(out, {x: [1.0, 2.0, 3.0]})  # fine
        sess.run(out, {x: [1.0, 200.0, 3.0]})  # 200000 > 65504 in float16
    _flush()
    records = [
        Path(d.path) / f
        for d in _npu_steps(tmp_path)
        for f in d.files()
        if f.startswith(dumpfile.OPDEBUG_PREFIX)
    ]
    # the device's raw record (no extension), its AI Core unit as msaccucmp decodes it
    assert [p.name.count(".") for p in records] == [4]
    core = read_raw_record(records[0])["AI Core"]
    assert (core["status"], core["stream_id"]) == (0x20, 0)
    assert core["task_id"] == int(records[0].name.split(".")[2])
    # what tf2npu knows beyond the device's fields: the sidecar, by the record's name
    facts = read_sidecar(records[0].parent)[records[0].name]
    assert (facts["op_name"], facts["step"], facts["kind"]) == ("big", 1, "inf_nan")
    assert facts["created_at"].startswith(__file__)
    # the op's tensors, as the device writes them: one raw file, inputs and outputs together
    [step] = [d for d in _npu_steps(tmp_path) if d.path == records[0].parent]
    tensors = [t for t in dumpfile.iter_npu_tensors(step) if t.name.op_name == "big"]
    assert [(t.kind, t.index, t.raw) for t in tensors] == [
        ("input", 0, True), ("input", 1, True), ("output", 0, True),
    ]  # fmt: skip
    from tf2npu.debug.overflow.analysis import analyse

    [found] = analyse(tmp_path).overflows  # tf2npu overflow reads the raw files
    assert (found.op_name, found.record.step, found.created_at) == ("big", 1, facts["created_at"])
    assert [(t.kind, t.index, t.pos_inf) for t in found.tensors] == [
        ("input", 0, 0), ("input", 1, 0), ("output", 0, 1),
    ]  # fmt: skip


def test_atomic_overflow_mode_records_nothing_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = npu_config(
        precision_mode="must_keep_origin_dtype",
        enable_dump_debug=True,
        dump_debug_mode="atomic_overflow",
        dump_path=str(tmp_path),
    )
    _train(config, steps=1)
    _flush()
    assert list(tmp_path.iterdir()) == []
    assert "atomic adds, which do not exist off the device" in caplog.text


def _cond_graph() -> dict[str, Any]:
    """A v1 cond (Switch/Merge), as NPULossScaleOptimizer and batch_norm(is_training=tensor)
    build: in every run one of the Merge's inputs is dead."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        flag = tf.compat.v1.placeholder(tf.bool, [], name="flag")
        # v1 control flow, as tf.cond builds it under tf2npu run (tests run with v2's If)
        false, true = tf.raw_ops.Switch(data=x, pred=flag, name="switch")
        y, _ = tf.raw_ops.Merge(inputs=[false + 1.0, true * 2.0], name="merge")
        out = tf.identity(y, name="out")
    return {"graph": graph, "x": x, "flag": flag, "out": out}


@pytest.mark.parametrize(
    "options",
    [{"enable_dump": True, "dump_mode": "all"}, {"enable_dump": True, "dump_mode": "input"},
     {"enable_dump_debug": True}],
)  # fmt: skip
def test_inputs_from_a_cond_branch_are_not_fetched(tmp_path: Path, options: dict[str, Any]) -> None:
    # precision_tool's action='dump' sets dump_mode=all: a ModelZoo script with
    # NPULossScaleOptimizer failed with "Retval[12] does not have value" (a dead Merge input).
    model = _cond_graph()
    config = npu_config(precision_mode="must_keep_origin_dtype", dump_path=str(tmp_path), **options)
    with tf.compat.v1.Session(graph=model["graph"], config=config) as sess:
        feeds = {model["x"]: [1.0, 2.0]}
        assert list(sess.run(model["out"], {**feeds, model["flag"]: True})) == [2.0, 4.0]
        assert list(sess.run(model["out"], {**feeds, model["flag"]: False})) == [2.0, 3.0]
    _flush()
    if options.get("enable_dump"):
        tensors = [t for d in _npu_steps(tmp_path) for t in dumpfile.iter_npu_tensors(d)]
        merge = {t.kind for t in tensors if t.name.op_name == "merge"}
        assert merge == ({"output"} if options["dump_mode"] == "all" else set())
        out = [t for t in tensors if t.name.op_name == "out" and (t.kind, t.index) == ("input", 0)]
        assert len(out) == 2  # the Merge's output, read by out, is dumped as out's input


def test_a_read_of_a_ref_variable_is_not_dumped(tmp_path: Path) -> None:
    """``w/read`` shares the variable's buffer, which the step updates before the value is
    copied out: its dump would show the updated weight, not the one the MatMul used."""
    from tf2npu.runtime import context
    from tf2npu.runtime.dump import golden_dump

    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.Variable([[1.0]], name="w", use_resource=False)
        x = tf.constant([[2.0]], name="x")
        y = tf.matmul(x, w, name="y")
        # the gradient reads y, so the update runs after the MatMul
        loss = tf.reduce_sum(tf.square(y))
        train = tf.compat.v1.train.GradientDescentOptimizer(1.0).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    ctx = context()
    ctx.extra_instruments.append(golden_dump(tmp_path, ctx, steps="0"))
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(init)
        assert sess.run([y, train])[0].tolist() == [[2.0]]
    _flush()
    step = tmp_path / "2" / "0"  # the training signature (the initialiser's is 1), step 0
    names = {dumpfile.parse_golden(p.name).op_name for p in step.iterdir()}  # type: ignore[union-attr]
    assert "y" in names and "w_read" not in names
    [y_file] = [p for p in step.iterdir() if p.name.startswith("y.0.")]
    assert np.load(y_file).tolist() == [[2.0]]


def test_the_graph_json_has_the_shapes_of_the_dumped_tensors(tmp_path: Path) -> None:
    config = npu_config(
        precision_mode="must_keep_origin_dtype",
        enable_dump=True,
        dump_path=str(tmp_path),
        dump_mode="all",
        dump_step="0",
    )
    _train(config, steps=1)
    _flush()
    graphs = [g for d in _npu_steps(tmp_path) if d.graph_json for g in gegraph.load(d.graph_json)]
    [loss] = [op for g in graphs for op in g.ops if op.name == "loss"]
    assert loss.output_desc[0].shape == ()  # a scalar, known from its value
    fused = [op for g in graphs for op in g.ops if op.pass_name]
    assert [d.shape for d in fused[0].output_desc] == [(2, 3)]
