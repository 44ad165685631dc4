"""Which tensor is compared with which: through the graph JSON, by user names, by op names."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tf2npu.artifacts.gegraph import GeOp, TensorDesc
from tf2npu.debug.compare.matching import Plan, TensorPair, load_tree, plan_compare, vendor_index
from tf2npu.errors import UsageError
from tf2npu.testing.dumptrees import (
    TS,
    fused_ops,
    graph_json_path,
    npu_step_dir,
    write_dense_golden,
    write_fused_npu,
    write_golden,
    write_graph,
    write_npu,
    write_unfused_npu,
)


def rows(plan: Plan) -> list[tuple[int, str, str, str, tuple[str, ...]]]:
    """(Index, TensorIndex, right file's name or '*', carried dtype, user names) per row."""
    return [
        (p.index, p.tensor_index, p.right.path.name if p.right else "*", carried(p), p.user_names)
        for unit in plan.units
        for p in unit.pairs
    ]


def carried(pair: TensorPair) -> str:
    return str(pair.left.carried) if pair.left else "-"


def test_npu_against_golden_through_the_graph_json(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu")
    write_dense_golden(tmp_path / "golden")
    plan = plan_compare(tmp_path / "npu", tmp_path / "golden")
    assert plan.mode == "npu-vs-golden"
    x, bias_add, relu = (
        f"{name}.0.{TS + i}.npy" for i, name in ((0, "x"), (2, "dense_BiasAdd"), (3, "dense_Relu"))
    )
    fused_users = ("dense/MatMul", "dense/BiasAdd")
    assert rows(plan) == [
        (0, "x:output:0", x, "float32", ("x",)),
        (1, "x_cast:input:0", x, "float32", ("x",)),
        # a cast has no golden tensor of its own: it is its input in another dtype
        (1, "x_cast:output:0", x, "float16", ("x",)),
        (2, "dense/fused:input:0", x, "float16", ("x",)),
        # the fused op's output carries dense/BiasAdd:0 (_datadump_origin_name)
        (2, "dense/fused:output:0", bias_add, "float16", fused_users),
        (3, "dense/Relu:input:0", bias_add, "float16", fused_users),
        (3, "dense/Relu:output:0", relu, "float16", ("dense/Relu",)),
    ]
    pair = plan.units[0].pairs[4]
    assert (pair.op_type, pair.left.names, pair.right.names) == (
        "FusedMatMul", ("dense/fused",), fused_users,
    )  # fmt: skip
    unit = plan.units[0]
    assert (unit.step, unit.device_id, unit.model_name, unit.model_id) == (0, 0, "GeOp1_0_1", 1)
    assert unit.graph_json == tmp_path / "npu" / "graph" / "20260101120000" / "GeOp1_0_1.json"
    assert unit.input_nodes == ("x",)
    assert [(op.name, op.inputs) for op in unit.ops] == [
        ("x", ()),
        ("x_cast", (("x", 0),)),
        ("dense/fused", (("x_cast", 0),)),  # the control edge x:-1 is no input
        ("dense/Relu", (("dense/fused", 0),)),
    ]


def test_without_origin_attributes_a_fused_op_is_never_guessed(tmp_path: Path) -> None:
    """A fused output that names no user tensor is unmatched (msaccucmp's rule): guessing its
    last original op compared a 3-D dense layer's inner 2-D matmul with the MatMul before it."""
    step = write_fused_npu(tmp_path / "npu", mode="output")
    ops = [
        GeOp(op.name, op.type, op.id, op.inputs, op.input_desc, (TensorDesc("DT_FLOAT16"),),
             op.original_op_names)
        for op in fused_ops()
    ]  # fmt: skip
    write_graph(step, ops)
    write_dense_golden(tmp_path / "golden")
    plan = plan_compare(tmp_path / "npu", tmp_path / "golden")
    found = {p.tensor_index: p.right.path.name if p.right else "*" for p in plan.units[0].pairs}
    assert found["dense/fused:output:0"] == "*"
    assert found["x_cast:output:0"] == f"x.0.{TS}.npy"  # one original: that op


def test_npu_against_npu_by_the_user_names_both_graphs_give(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "on", mode="output")
    write_unfused_npu(tmp_path / "off")
    plan = plan_compare(tmp_path / "on", tmp_path / "off")
    assert plan.mode == "npu-vs-npu"
    got = [(p.tensor_index, p.right.names if p.right else None) for p in plan.units[0].pairs]
    assert got == [
        ("x:output:0", ("x",)),
        ("x_cast:output:0", ("x_cast",)),
        ("dense/fused:output:0", ("dense/BiasAdd",)),
        ("dense/Relu:output:0", ("dense/Relu",)),
    ]
    assert plan.units[0].pairs[2].right.path.name.startswith("BiasAdd.dense_BiasAdd.3.0.")


def test_the_graph_jsons_can_be_given_with_f_and_cf(tmp_path: Path) -> None:
    on, off = write_fused_npu(tmp_path / "on", mode="output"), write_unfused_npu(tmp_path / "off")
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    for name, folder in (("on.json", on), ("off.json", off)):
        graph_json_path(folder).rename(graphs / name)
    bare = plan_compare(tmp_path / "on", tmp_path / "off")
    assert [p.right is not None for p in bare.units[0].pairs] == [True, True, False, True]
    given = plan_compare(
        tmp_path / "on", tmp_path / "off",
        graph_json=graphs / "on.json", close_graph_json=graphs / "off.json",
    )  # fmt: skip
    assert all(p.right is not None for p in given.units[0].pairs)
    assert given.units[0].graph_json is None  # not from the tree
    assert given.notes == ()


def test_f_and_cf_in_msaccucmps_sense_go_to_the_dump_they_name(tmp_path: Path) -> None:
    """Seed 001's order: the fusions-off dump first, -f the fusions-on graph, -cf the off one."""
    on, off = write_fused_npu(tmp_path / "on", mode="output"), write_unfused_npu(tmp_path / "off")
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    for name, folder in (("on.json", on), ("off.json", off)):
        graph_json_path(folder).rename(graphs / name)
    plan = plan_compare(
        tmp_path / "off", tmp_path / "on",
        graph_json=graphs / "on.json", close_graph_json=graphs / "off.json",
    )  # fmt: skip
    [note] = plan.notes
    assert note.startswith(f"-f {str(graphs / 'on.json')!r} names the ops of GOLDEN_DUMP")
    got = [(p.tensor_index, p.right.names if p.right else None) for p in plan.units[0].pairs]
    assert got == [
        ("x:output:0", ("x",)),
        ("x_cast:output:0", ("x_cast",)),
        ("dense/MatMul:output:0", None),  # inside the fusion: no fused-side tensor
        ("dense/BiasAdd:output:0", ("dense/fused",)),  # the fused op carries BiasAdd's tensor
        ("dense/Relu:output:0", ("dense/Relu",)),
    ]
    swapped_back = plan_compare(
        tmp_path / "off", tmp_path / "on",
        graph_json=graphs / "off.json", close_graph_json=graphs / "on.json",
    )  # fmt: skip
    assert swapped_back.notes == ()  # given as NPU_DUMP's and GOLDEN_DUMP's: kept


def test_without_a_graph_json_ops_match_golden_by_name_and_inputs_do_not(tmp_path: Path) -> None:
    step = write_fused_npu(tmp_path / "npu")
    graph_json_path(step).unlink()
    write_dense_golden(tmp_path / "golden")
    pairs = plan_compare(tmp_path / "npu", tmp_path / "golden").units[0].pairs
    matched = {p.tensor_index: p.right is not None for p in pairs}
    assert matched == {
        "x:output:0": True,
        "x_cast:input:0": False,
        "x_cast:output:0": False,
        "dense_fused:input:0": False,
        "dense_fused:output:0": False,
        "dense_Relu:input:0": False,
        "dense_Relu:output:0": True,
    }
    note = next(p.note for p in pairs if p.tensor_index == "dense_Relu:input:0")
    assert note == (
        "[dense_Relu] There is no the ground truth dump file for dense_Relu:input:0. "
        "(Inputs are matched through the op producing them: give -f GRAPH_JSON.)"
    )


def test_a_graph_op_without_dump_files_gets_one_row(tmp_path: Path) -> None:
    step = write_fused_npu(tmp_path / "npu", mode="output")
    for path in step.glob("Data.x.*"):
        path.unlink()
    write_dense_golden(tmp_path / "golden")
    first = plan_compare(tmp_path / "npu", tmp_path / "golden").units[0].pairs[0]
    assert (first.tensor_index, first.left, first.right) == ("NaN", None, None)
    assert first.note == '[x] There is no dump file for my output operator "x". The type is Data.'


def test_golden_against_golden_by_name_in_timestamp_order(tmp_path: Path) -> None:
    write_dense_golden(tmp_path / "a")
    write_dense_golden(tmp_path / "b", step=None)
    plan = plan_compare(tmp_path / "a", tmp_path / "b")
    assert plan.mode == "golden-vs-golden"
    assert [(p.index, p.tensor_index) for p in plan.units[0].pairs] == [
        (0, "x:output:0"),
        (1, "dense_MatMul:output:0"),
        (2, "dense_BiasAdd:output:0"),
        (3, "dense_Relu:output:0"),
    ]


def test_golden_first_puts_the_golden_tensor_on_the_left(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu", mode="output")
    write_dense_golden(tmp_path / "golden")
    plan = plan_compare(tmp_path / "golden", tmp_path / "npu")
    assert plan.mode == "golden-vs-npu"
    pair = plan.units[0].pairs[2]
    assert pair.tensor_index == "dense/fused:output:0"
    assert pair.left.path.name.startswith("dense_BiasAdd.0.")
    assert pair.right.names == ("dense/fused",)


def test_models_of_one_step_are_units_in_model_id_order(tmp_path: Path) -> None:
    second = npu_step_dir(tmp_path / "npu", model_name="GeOp2_0_7", model_id=7)
    first = npu_step_dir(tmp_path / "npu", model_name="GeOp9_0_3", model_id=3)
    for folder, name in ((second, "b"), (first, "a")):
        write_npu(folder, GeOp(name, "Relu", 0), {("output", 0): np.ones(2)})
    write_golden(tmp_path / "golden", "a", 0, np.ones(2))
    plan = plan_compare(tmp_path / "npu", tmp_path / "golden")
    assert [u.label for u in plan.units] == ["0_GeOp9_0_3_0", "0_GeOp2_0_7_0"]


def test_steps_in_common_are_compared(tmp_path: Path) -> None:
    for step in (0, 1, 2):
        write_fused_npu(tmp_path / "npu", mode="output", step=step)
    write_dense_golden(tmp_path / "golden", step=1)
    write_dense_golden(tmp_path / "golden", step=5)
    plan = plan_compare(tmp_path / "npu", tmp_path / "golden")
    assert [u.step for u in plan.units] == [1]


def test_one_step_against_a_flat_golden_folder(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu", step=3)
    write_dense_golden(tmp_path / "golden", step=None)
    assert [u.step for u in plan_compare(tmp_path / "npu", tmp_path / "golden").units] == [3]


def test_several_steps_against_a_flat_golden_folder_is_an_error(tmp_path: Path) -> None:
    for step in (0, 1):
        write_fused_npu(tmp_path / "npu", step=step)
    write_dense_golden(tmp_path / "golden", step=None)
    with pytest.raises(UsageError) as error:
        plan_compare(tmp_path / "npu", tmp_path / "golden")
    assert str(error.value) == (
        "NPU_DUMP holds steps 0, 1 and GOLDEN_DUMP steps (unnumbered): no step in common; give "
        "one step folder of each (the numbered folders)"
    )


def test_a_step_folder_given_directly_keeps_its_layout(tmp_path: Path) -> None:
    step = write_fused_npu(tmp_path / "npu")
    write_fused_npu(tmp_path / "npu", step=1)
    write_dense_golden(tmp_path / "golden", step=None)
    unit = plan_compare(step, tmp_path / "golden").units[0]
    assert (unit.model_name, unit.step, unit.graph_json is not None) == ("GeOp1_0_1", 0, True)


def test_real_device_names_converted_by_msaccucmp_match_golden_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "npu_npy"
    folder.mkdir()
    np.save(folder / "Relu.dense_Relu.5.1673383728093446.output.0.npy", np.ones(3))
    np.save(folder / "Add.add_1.0.3.1673383728093447.4.1.0.0.output.0.2x3.npy", np.ones((2, 3)))
    write_golden(tmp_path / "golden", "dense/Relu", 0, np.ones(3))
    write_golden(tmp_path / "golden", "add_1", 0, np.ones((2, 3)))
    pairs = plan_compare(folder, tmp_path / "golden").units[0].pairs
    assert [(p.index, p.tensor_index, p.right is not None) for p in pairs] == [
        (0, "add_1:output:0", True),
        (1, "dense_Relu:output:0", True),  # msaccucmp's Index: a counter, not the task id
    ]


def test_index_is_msaccucmps_fusion_group_counter() -> None:
    ops = [
        GeOp("x", "Data", 0),
        GeOp("x/_tf2npu_to_fp16", "Cast", 1, original_op_names=("x",)),
        GeOp("y/fused", "_FusedMatMul", 2, original_op_names=("mm", "ba", "y")),
        GeOp("mm2/_tf2npu_fp16", "MatMul", 3, original_op_names=("mm2",)),
        GeOp("mm2/_tf2npu_to_f32", "Cast", 4, original_op_names=("mm2",)),
        GeOp("mm2", "Identity", 5),  # the user's own name: the group its clone opened
        GeOp("out", "Identity", 6),
    ]
    assert vendor_index(ops) == {
        "x": 0, "x/_tf2npu_to_fp16": 0, "y/fused": 1, "mm2/_tf2npu_fp16": 2,
        "mm2/_tf2npu_to_f32": 2, "mm2": 2, "out": 3,
    }  # fmt: skip


# -- refusals ------------------------------------------------------------------------------


def test_missing_and_non_folder_trees(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as error:
        load_tree(tmp_path / "nope", "NPU_DUMP")
    assert str(error.value) == (
        f"NPU_DUMP {str(tmp_path / 'nope')!r} does not exist; give the folder a dump was written "
        "to (tf2npu run --dump DIR, or the dump_path option)"
    )
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is not a folder; give the folder of a dump"):
        load_tree(tmp_path / "file", "GOLDEN_DUMP")


def test_an_empty_tree_says_which_names_it_looked_for(tmp_path: Path) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "sub" / "notes.txt").write_text("x")
    with pytest.raises(UsageError) as error:
        load_tree(tmp_path / "empty", "GOLDEN_DUMP")
    assert str(error.value) == (
        f"GOLDEN_DUMP {str(tmp_path / 'empty')!r}: no dump files found; expected NPU dump files "
        "{OpType}.{op_name}.{task_id}.{stream_id}.{timestamp} (raw) or "
        "{OpType}.{op_name}.{task_id}.{stream_id}.{timestamp}.{input|output}.{i}.npy or golden "
        "files {op_name}.{output_index}.{timestamp}.npy in it or its subfolders"
    )


def test_protobuf_layout_device_files_ask_for_msaccucmp_convert(tmp_path: Path) -> None:
    folder = npu_step_dir(tmp_path / "raw")
    (folder / "Add.add_1.0.3.1673383728093446.4.1.0.0").write_bytes(b"\x00" * 16)
    with pytest.raises(UsageError) as error:
        load_tree(tmp_path / "raw", "NPU_DUMP")
    assert str(error.value).endswith(
        ": its device dump files are not in the TLV layout tf2npu reads (e.g. "
        "'Add.add_1.0.3.1673383728093446.4.1.0.0': the protobuf layout, or no tensor in it); "
        "convert them first with `python3 msaccucmp.py convert -d DIR -out DIR_NPY` (the "
        "protobuf layout needs CANN's libascend_dump_parser.so) and compare DIR_NPY"
    )


def test_statistics_dumps_are_not_tensors(tmp_path: Path) -> None:
    folder = npu_step_dir(tmp_path / "stats")
    (folder / "Add.add_1.0.0.1700000000000000.csv").write_text("Input/Output\n")
    with pytest.raises(UsageError, match=r"statistics dumps only \(dump_data=stats\)"):
        load_tree(tmp_path / "stats", "NPU_DUMP")


def test_a_tree_mixing_npu_and_golden_folders_is_refused(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "both" / "npu")
    write_dense_golden(tmp_path / "both" / "golden")
    with pytest.raises(UsageError, match=r"holds NPU dump folders .* and golden ones"):
        load_tree(tmp_path / "both", "NPU_DUMP")


def test_no_tensor_with_a_counterpart_is_an_error(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu")
    write_golden(tmp_path / "golden", "other", 0, np.ones(2))
    with pytest.raises(UsageError) as error:
        plan_compare(tmp_path / "npu", tmp_path / "golden")
    assert str(error.value) == (
        f"no tensor of NPU_DUMP {str(tmp_path / 'npu')!r} (7 tensors) has a counterpart in "
        f"GOLDEN_DUMP {str(tmp_path / 'golden')!r}; check that GOLDEN_DUMP is a golden dump of "
        "the same script (tf2npu run --no-npu --dump DIR) and that the graph JSON (-f) belongs "
        "to NPU_DUMP"
    )


def test_an_unreadable_graph_json_names_the_file(tmp_path: Path) -> None:
    step = write_fused_npu(tmp_path / "npu")
    write_dense_golden(tmp_path / "golden")
    graph_json_path(step).write_text("{not json")
    with pytest.raises(
        UsageError, match=r"graph JSON '.*/graph/20260101120000/GeOp1_0_1.json' cannot be read"
    ):
        plan_compare(tmp_path / "npu", tmp_path / "golden")
    shutil.rmtree(tmp_path / "npu")
    write_fused_npu(tmp_path / "npu")
    bad = tmp_path / "g.json"
    bad.write_text('{"graph": 3}')
    with pytest.raises(UsageError, match=r"-f '.*g.json' cannot be read as a graph JSON"):
        plan_compare(tmp_path / "npu", tmp_path / "golden", graph_json=bad)
