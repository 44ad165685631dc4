"""The graph JSON model (tf2npu.artifacts.gegraph)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.gegraph import GeGraph, GeOp, TensorDesc

FUSED = GeOp(
    name="dense/BiasAdd_fused",
    type="FusedMatMul",
    id=1,
    inputs=("x:0", "dense/kernel/read:0", "dense/bias/read:0"),
    output_desc=(TensorDesc("DT_FLOAT", (2, 3), "dense/BiasAdd", 0),),
    original_op_names=("dense/MatMul", "dense/BiasAdd"),
    pass_name="MatMulBiasAddFusionPass",
)


def test_the_json_has_the_atc_shape() -> None:
    data = GeGraph("GeOp1_0", (FUSED,)).to_json()
    op = data["graph"][0]["op"][0]
    assert data["graph"][0]["name"] == "GeOp1_0"
    assert op["attr"] == [
        {
            "key": "_datadump_original_op_names",
            "value": {"list": {"s": ["dense/MatMul", "dense/BiasAdd"]}},
        },
        {"key": "pass_name", "value": {"s": "MatMulBiasAddFusionPass"}},
    ]
    assert op["output_desc"] == [
        {
            "dtype": "DT_FLOAT",
            "layout": "ND",
            "shape": {"dim": [2, 3]},
            "attr": [
                {"key": "_datadump_origin_name", "value": {"s": "dense/BiasAdd"}},
                {"key": "_datadump_origin_output_index", "value": {"i": 0}},
            ],
        }
    ]


def test_dump_and_load_round_trip(tmp_path: Path) -> None:
    plain = GeOp("x", "Placeholder", 0, output_desc=(TensorDesc("DT_FLOAT", (2, 4)),))
    graph = GeGraph("GeOp1_0", (plain, FUSED))
    path = tmp_path / "ge_proto_00000001_Build.json"
    gegraph.dump(graph, path)
    assert gegraph.load(path) == [graph]
    assert [op.origins for op in graph.ops] == [("x",), ("dense/MatMul", "dense/BiasAdd")]


def test_load_reads_a_vendor_graph_without_ids_or_attrs(tmp_path: Path) -> None:
    path = tmp_path / "test_on.json"
    vendor = {"graph": [{"name": "ge_default_1", "op": [{"name": "a", "type": "Data"}]}]}
    path.write_text(json.dumps(vendor))
    [graph] = gegraph.load(path)
    assert graph.ops == (GeOp("a", "Data", 0),)


@pytest.mark.parametrize("text", ["not json", '{"op": []}', '{"graph": [{"op": [{}]}]}'])
def test_load_names_the_file_of_a_bad_graph(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"bad\.json"):
        gegraph.load(path)


def test_each_op_lists_where_its_outputs_go_as_ge_writes_it() -> None:
    """precision_tool reads output i's descriptor from the i-th dst_index that is not -1."""
    f32 = TensorDesc("DT_FLOAT")
    ops = (
        GeOp("a", "Data", 0, output_desc=(f32, f32)),
        GeOp("b", "Add", 1, ("a:1", "a:1"), output_desc=(f32,)),
        GeOp("c", "NoOp", 2, ("b:-1",)),
    )
    [a, b, c] = GeGraph("GeOp1_0_1", ops).to_json()["graph"][0]["op"]
    assert (a["dst_name"], a["dst_index"]) == (["", "b"], [0, 0])  # output 0 is read by none
    assert (b["dst_name"], b["dst_index"]) == (["", "c"], [0, -1])  # then its control edge
    assert (c["dst_name"], c["dst_index"]) == ([], [])


def test_inputs_from_outside_the_graph_become_data_ops() -> None:
    f16, f32 = TensorDesc("DT_FLOAT16"), TensorDesc("DT_FLOAT")
    ops = (
        GeOp("x/_cast", "Cast", 0, ("x:0",), (f32,), (f16,)),
        GeOp("mm", "MatMul", 1, ("x/_cast:0", "other/w:1", "init:-1"), (f16, f16), (f16,)),
    )
    graph = gegraph.with_data_inputs(GeGraph("GeOp1_0_2", ops))
    assert [(op.name, op.type, op.id, op.inputs, op.output_desc) for op in graph.ops] == [
        ("x", "Data", 0, (), (f32,)),
        ("other/w", "Data", 1, (), (TensorDesc("DT_UNDEFINED"), f16)),  # its output 1 is read
        ("x/_cast", "Cast", 2, ("x:0",), (f16,)),
        ("mm", "MatMul", 3, ("x/_cast:0", "other/w:1"), (f16,)),  # no control edge from outside
    ]
    assert gegraph.with_data_inputs(graph) == graph


def test_proto_text_is_the_json_mapping_in_protobuf_text_format() -> None:
    op = GeOp("a/b", "Cast", 0, ("x:0",), output_desc=(TensorDesc("DT_FLOAT16", (2,)),))
    data = GeGraph("GeOp1_0_2", (op,)).to_json()
    assert gegraph.proto_text(data) == (
        'graph {\n  name: "GeOp1_0_2"\n  op {\n    name: "a/b"\n    type: "Cast"\n    id: 0\n'
        '    input: "x:0"\n    output_desc {\n      dtype: "DT_FLOAT16"\n      layout: "ND"\n'
        "      shape {\n        dim: 2\n      }\n    }\n"
        '    dst_name: ""\n    dst_index: 0\n  }\n}\n'
    )
    assert (
        gegraph.proto_text({"s": 'q"\\é\n', "b": False}) == 's: "q\\"\\\\\\xc3\\xa9\\n"\nb: false\n'
    )


def test_dump_build_leaves_what_ge_and_atc_leave_with_the_json_newer(tmp_path: Path) -> None:
    graph = GeGraph("GeOp1_0_3", (GeOp("x", "Data", 0),))
    converted = gegraph.dump_build([graph], tmp_path, 3)
    assert converted == tmp_path / "ge_proto_00000003_Build.txt.json"
    text = tmp_path / "ge_proto_00000003_Build.txt"
    assert converted.stat().st_mtime_ns > text.stat().st_mtime_ns  # precision_tool's rule
    assert gegraph.load(converted) == [graph]
    assert text.read_text().startswith('graph {\n  name: "GeOp1_0_3"\n')
