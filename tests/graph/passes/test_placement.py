"""The placement pass: every candidate rule of reference §3.3–§3.4 on small literal graphs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.core.framework import attr_value_pb2  # noqa: E402
from tests.graph.literal import Func, add  # noqa: E402

from tf2npu.config.options import NpuOptions  # noqa: E402
from tf2npu.graph.context import EngineConfig  # noqa: E402
from tf2npu.graph.decisions import PLACEMENT, Placement  # noqa: E402
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef  # noqa: E402
from tf2npu.graph.passes.device_strings import DeviceStrings  # noqa: E402
from tf2npu.graph.passes.infra import PassContext, PassResult  # noqa: E402
from tf2npu.graph.passes.placement import PlacementPass  # noqa: E402
from tf2npu.graph.placement.reasons import REASONS  # noqa: E402

pytestmark = pytest.mark.tf

F32, I64, STR, BOOL = tf.float32, tf.int64, tf.string, tf.bool


def run(g: Graph, **options: Any) -> tuple[PassResult[Graph], EngineConfig]:
    cfg = EngineConfig.build(NpuOptions.from_values(options))
    ctx = PassContext(config=cfg)
    DeviceStrings().run(g, ctx)
    result = PlacementPass().run(g, ctx)
    g.lint()
    for body in g.walk():
        for node in body:
            p: Placement = node.meta[PLACEMENT]
            assert p.code == REASONS[p.reason].code, node.name
            assert p.device or p.message, f"host node {node.name!r} does not say why"
    return result, cfg


def where(g: Graph) -> dict[str, tuple[bool, int, str, str]]:
    """Every node of the top-level graph: (device, code, reason, message)."""
    return {n.name: _row(n) for n in g}


def _row(node: Node) -> tuple[bool, int, str, str]:
    p: Placement = node.meta[PLACEMENT]
    return (p.device, p.code, p.reason, p.message)


def short(g: Graph) -> dict[str, str]:
    """Node name -> reason slug (for bigger graphs where the slug says enough)."""
    return {n.name: n.meta[PLACEMENT].reason for n in g}


DEV = (True, 0, "supported", "")


def _py(g: Graph, name: str, *inputs: str, tin: list[Any], tout: list[Any]) -> Node:
    return add(g, name, "PyFunc", *inputs, token="pyfunc_0", Tin=tin, Tout=tout)


# -- per-node predicates ------------------------------------------------------------------


def test_not_in_library_feed_and_supported() -> None:
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    _py(g, "py", "x", tin=[F32], tout=[F32])
    add(g, "relu", "Relu", "py", T=F32)
    result, _ = run(g)
    assert where(g) == {
        "x": (False, 4, "feed", "Placeholder: fed from the host each step"),
        "py": (False, 1, "not_in_library", "PyFunc: not in the device op library"),
        "relu": DEV,
    }
    assert dict(result.stats) == {
        "device": 1,
        "host": 2,
        "table_split": 0,
        "host.feed": 1,
        "host.not_in_library": 1,
    }


def _table_graph() -> Graph:
    g = Graph()
    add(g, "table", "HashTableV2", key_dtype=STR, value_dtype=I64)
    add(g, "keys", "Const", dtype=STR)
    add(g, "default", "Const", dtype=I64)
    add(g, "find", "LookupTableFindV2", "table", "keys", "default", Tin=STR, Tout=I64)
    add(g, "cast", "Cast", "find", SrcT=I64, DstT=F32)
    return g


def test_gray_ops_host_in_mixed_compute() -> None:
    g = _table_graph()
    run(g, mix_compile_mode=True)
    assert where(g) == {
        "table": (False, 2, "gray_op", "HashTableV2: gray op, host in mixed compute"),
        "keys": (False, 4, "not_compiled", "Const: not compiled on its own (feeds no device node)"),
        "default": (
            False,
            4,
            "not_compiled",
            "Const: not compiled on its own (feeds no device node)",
        ),
        "find": (False, 2, "gray_op", "LookupTableFindV2: gray op, host in mixed compute"),
        "cast": DEV,
    }


def test_gray_ops_device_in_full_offload() -> None:
    g = _table_graph()
    _, cfg = run(g)
    assert where(g) == {
        "table": DEV,
        "keys": (True, 0, "const_pulled", "feeds device node 'find'"),
        "default": (True, 0, "const_pulled", "feeds device node 'find'"),
        "find": DEV,
        "cast": DEV,
    }
    assert cfg.diagnostics.items == []


def test_const_pulled_by_control_edge_and_left_alone() -> None:
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    add(g, "relu", "Relu", "x", T=F32)
    add(g, "c_ctrl", "Const", ctrl=("relu",), dtype=F32)
    add(g, "c_host", "Const", ctrl=("x",), dtype=F32)
    add(g, "c_arg", "_Arg", T=F32, index=0)
    add(g, "ret", "_Retval", "relu", T=F32, index=0)
    add(g, "join", "StringJoin", N=0)
    run(g)
    assert where(g) == {
        "x": (False, 4, "feed", "Placeholder: fed from the host each step"),
        "relu": DEV,
        "c_ctrl": (True, 0, "const_pulled", "control-dependent on device node 'relu'"),
        "c_host": (False, 4, "unread", "Const: read by no node (never runs)"),
        "c_arg": (False, 4, "not_compiled", "_Arg: not compiled on its own"),
        "ret": (False, 4, "not_compiled", "_Retval: not compiled on its own"),
        "join": (False, 4, "not_compiled", "StringJoin: not compiled on its own"),
    }


def test_dataset_ops_never_compiled() -> None:
    g = Graph()
    add(g, "t", "Const", dtype=F32)
    add(g, "ds", "TensorSliceDataset", "t", Toutput_types=[F32])
    add(g, "custom", "MyOwnDatasetV2")
    run(g)
    assert where(g)["ds"] == (
        False,
        4,
        "dataset_op",
        "TensorSliceDataset: tf.data op, runs in the host input pipeline",
    )
    assert where(g)["custom"][2] == "dataset_op"
    assert where(g)["t"][2] == "not_compiled"


def _scoped() -> Graph:
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    add(g, "relu", "Relu", "x", T=F32, _without_npu_compile=True)
    add(g, "tanh", "Tanh", "relu", T=F32)
    return g


def test_without_npu_compile_counts_in_mixed_compute() -> None:
    g = _scoped()
    _, cfg = run(g, mix_compile_mode=True)
    assert where(g)["relu"] == (
        False,
        3,
        "without_npu_compile",
        "under without_npu_compile_scope",
    )
    assert where(g)["tanh"] == DEV
    assert cfg.diagnostics.items == []


def test_without_npu_compile_ignored_in_full_offload_with_warning() -> None:
    g = _scoped()
    _, cfg = run(g)
    assert where(g)["relu"] == DEV
    assert [d.render() for d in cfg.diagnostics.items] == [
        "relu: 1 node(s) are under without_npu_compile_scope ('relu') but the scope only counts "
        "in mixed compute, so they are placed on the device Fix: set mix_compile_mode=True to "
        "keep them on the host, or drop the scope"
    ]
    assert cfg.diagnostics.items[0].code == "without_npu_compile_ignored"


def _resources() -> Graph:
    g = Graph()
    add(g, "v", "VarHandleOp", dtype=F32, shape=attr_value_pb2.AttrValue())
    add(g, "read", "ReadVariableOp", "v", dtype=F32)
    add(g, "alias", "Identity", "v", T=tf.resource)
    add(g, "read2", "ReadVariableOp", "alias", dtype=F32)
    return g


def test_resource_rule_in_mixed_compute() -> None:
    g = _resources()
    run(g, mix_compile_mode=True)
    assert where(g) == {
        "v": (False, 3, "resource_edge", "feeds a resource tensor to host op 'alias'"),
        "read": (False, 3, "resource_edge", "reads a resource tensor from host op 'v'"),
        "alias": (
            False,
            3,
            "resource_op",
            "Identity: produces a resource tensor and is not a VarHandleOp",
        ),
        "read2": (
            False,
            3,
            "resource_op",
            "reads resource tensor 'alias' from Identity 'alias', not a VarHandleOp",
        ),
    }


def test_resource_rule_off_in_full_offload() -> None:
    g = _resources()
    run(g)
    assert set(where(g).values()) == {DEV}


def test_variable_placement_host_and_ref_propagation() -> None:
    g = Graph()
    add(g, "v", "VariableV2", dtype=F32, shape=attr_value_pb2.AttrValue())
    add(g, "one", "Const", dtype=F32)
    add(g, "assign", "Assign", "v", "one", T=F32)
    add(g, "snap", "Identity", "v", T=F32)
    run(g, variable_placement="Host", mix_compile_mode=True)
    assert where(g) == {
        "v": (
            False,
            3,
            "variable_placement",
            "VariableV2: variable kept on the host (variable_placement=Host)",
        ),
        "one": (False, 4, "not_compiled", "Const: not compiled on its own (feeds no device node)"),
        "assign": (False, 3, "ref_edge", "reads a ref tensor from host op 'v'"),
        "snap": DEV,
    }


def test_ref_edge_moves_producer_of_host_ref_input() -> None:
    g = Graph()
    add(g, "v", "VariableV2", dtype=F32, shape=attr_value_pb2.AttrValue())
    add(g, "x", "Placeholder", dtype=F32)
    add(g, "py", "PyFunc", "x", token="t", Tin=[F32], Tout=[F32])
    add(g, "assign", "Assign", "v", "py", T=F32, _without_npu_compile=True)
    run(g, mix_compile_mode=True)
    assert where(g)["v"] == (False, 3, "ref_edge", "feeds a ref tensor to host op 'assign'")


# -- string / resource propagation ---------------------------------------------------------


def _strings() -> Graph:
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    _py(g, "py", "x", tin=[F32], tout=[STR])
    add(g, "len", "StringLength", "py")
    add(g, "cond", "Const", dtype=BOOL)
    add(g, "check", "Assert", "cond", "py", T=[STR])
    add(g, "num", "AsString", "x", T=F32)
    _py(g, "sink", "num", tin=[STR], tout=[F32])
    return g


def test_string_edges_cross_when_iterations_per_loop_is_1() -> None:
    g = _strings()
    run(g)
    assert short(g) == {
        "x": "feed",
        "py": "not_in_library",
        "len": "supported",
        "cond": "const_pulled",
        "check": "supported",
        "num": "supported",
        "sink": "not_in_library",
    }


def test_string_edges_propagate_with_iteration_offload() -> None:
    g = _strings()
    result, _ = run(g, iterations_per_loop=10)
    rows = where(g)
    assert rows["len"] == (False, 3, "string_edge", "reads a string tensor from host op 'py'")
    assert rows["num"] == (False, 3, "string_edge", "feeds a string tensor to host op 'sink'")
    assert rows["check"] == DEV  # Assert consumers are exempt
    assert result.stats["host.string_edge"] == 2


def test_propagation_reaches_a_fixpoint_along_chains() -> None:
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    _py(g, "py", "x", tin=[F32], tout=[STR])
    add(g, "a", "Identity", "py", T=STR)
    add(g, "b", "Identity", "a", T=STR)
    add(g, "c", "StringLength", "b")
    run(g, iterations_per_loop=2)
    assert where(g)["c"] == (False, 3, "string_edge", "reads a string tensor from host op 'b'")
    assert where(g)["b"] == (False, 3, "string_edge", "reads a string tensor from host op 'a'")


def test_variant_edge_from_host() -> None:
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    _py(g, "py", "x", tin=[F32], tout=[tf.variant])
    add(g, "alias", "Identity", "py", T=tf.variant)
    run(g)
    assert where(g)["alias"] == (
        False,
        3,
        "variant_edge",
        "reads a variant tensor from host op 'py'",
    )


# -- functions ---------------------------------------------------------------------------


def _library(g: Graph, name: str, ops: list[tuple[str, str, dict[str, Any]]]) -> FunctionGraph:
    body = FunctionGraph(name, g)
    for node_name, op, attrs in ops:
        add(body, node_name, op, **attrs)
    g.functions[name] = body
    return body


def test_library_call_all_or_nothing_names_first_host_op() -> None:
    g = Graph()
    _library(g, "good", [("r", "Relu", {"T": F32}), ("k", "Const", {"dtype": F32})])
    _library(g, "bad", [("r", "Relu", {"T": F32}), ("p", "PyFunc", {"token": "t"})])
    _library(g, "outer", [("call", "bad", {})])
    add(g, "g", "good")
    add(g, "b", "bad")
    add(g, "o", "StatefulPartitionedCall", f=Func("outer"))
    run(g)
    rows = where(g)
    assert rows["g"] == DEV
    assert rows["b"] == (
        False,
        3,
        "function_host_op",
        "calls function 'bad' that contains host op 'p' (PyFunc: not in the device op library)",
    )
    assert rows["o"] == (
        False,
        3,
        "function_host_op",
        "references function 'outer' that contains host op 'p' (PyFunc: not in the device op "
        "library)",
    )
    bad = g.functions["bad"]
    assert _row(bad["p"]) == (False, 1, "not_in_library", "PyFunc: not in the device op library")
    assert _row(bad["r"]) == (
        False,
        3,
        "in_host_function",
        "in function 'bad' that contains host op 'p'",
    )
    assert _row(g.functions["good"]["k"]) == DEV


def test_supported_function_called_only_from_host() -> None:
    g = Graph()
    _library(g, "fn", [("r", "Relu", {"T": F32})])
    _library(g, "spare", [("r", "Relu", {"T": F32})])
    add(g, "t", "Const", dtype=F32)
    add(g, "ds", "TensorSliceDataset", "t", Toutput_types=[F32])
    add(g, "map", "MapDataset", "ds", f=Func("fn"))
    run(g)
    assert _row(g.functions["fn"]["r"]) == (
        False,
        3,
        "called_from_host",
        "in function 'fn', called only by host nodes (first: 'map')",
    )
    assert _row(g.functions["spare"]["r"]) == DEV


def _while_v2_with_py_func() -> Graph:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")

        def body(i: Any, v: Any) -> tuple[Any, Any]:
            w = tf.compat.v1.py_func(lambda a: a, [v], tf.float32, name="hostfn")
            w.set_shape([2])
            return i + 1, w * 2.0

        out = tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), x], name="loop")
        tf.identity(out[1] + 1.0, name="y")
    return Graph.from_graph_def(graph.as_graph_def())


def test_while_v2_body_with_py_func_is_host() -> None:
    g = _while_v2_with_py_func()
    run(g)
    (loop,) = [n for n in g if n.op in ("While", "StatelessWhile")]
    placement = loop.meta[PLACEMENT]
    assert (placement.device, placement.code, placement.reason) == (False, 3, "function_host_op")
    assert placement.message.startswith("references function 'loop_body")
    assert placement.message.endswith(
        "that contains host op 'hostfn' (PyFunc: not in the device op library)"
    )
    body = next(b for name, b in g.functions.items() if name.startswith("loop_body"))
    assert _row(body["hostfn"])[2] == "not_in_library"
    assert {_row(n)[2] for n in body if n.name != "hostfn"} == {"in_host_function"}
    cond = next(b for name, b in g.functions.items() if name.startswith("loop_cond"))
    assert {_row(n)[2] for n in cond} == {"called_from_host"}
    assert where(g)["y"] == DEV


# -- v1 control-flow frames -----------------------------------------------------------------


@pytest.fixture
def v1_control_flow() -> Iterator[None]:
    tf.compat.v1.disable_control_flow_v2()
    try:
        yield
    finally:
        tf.compat.v1.enable_control_flow_v2()


def _v1_loops(*, py_in_outer: bool, py_in_inner: bool) -> Graph:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")

        def inner(j: Any, v: Any) -> tuple[Any, Any]:
            if py_in_inner:
                v = tf.compat.v1.py_func(lambda a: a, [v], tf.float32, name="hostfn")
                v.set_shape([2])
            return j + 1, v * 2.0

        def outer(i: Any, v: Any) -> tuple[Any, Any]:
            if py_in_outer:
                v = tf.compat.v1.py_func(lambda a: a, [v], tf.float32, name="hostfn")
                v.set_shape([2])
            _, w = tf.compat.v1.while_loop(
                lambda j, v: j < 2, inner, [tf.constant(0), v], name="inner"
            )
            return i + 1, w + 1.0

        out = tf.compat.v1.while_loop(lambda i, v: i < 3, outer, [tf.constant(0), x], name="outer")
        tf.identity(out[1], name="y")
    g = Graph.from_graph_def(graph.as_graph_def())
    assert not g.functions
    return g


def _frame_of(name: str) -> str:
    if name.startswith("outer/inner/"):
        return "inner"
    return "outer" if name.startswith("outer/") else "root"


@pytest.mark.usefixtures("v1_control_flow")
def test_v1_frame_with_host_op_is_host_whole_in_mixed_compute() -> None:
    g = _v1_loops(py_in_outer=False, py_in_inner=True)
    run(g, mix_compile_mode=True)
    by_frame: dict[str, set[str]] = {}
    for node in g:
        by_frame.setdefault(_frame_of(node.name), set()).add(node.meta[PLACEMENT].reason)
    assert by_frame["inner"] == {"frame", "not_in_library"}
    assert by_frame["outer"] == {"frame"}
    enter = g["outer/inner/Enter"].meta[PLACEMENT]
    assert (enter.code, enter.message) == (
        3,
        "inside while frame 'outer/inner/while_context' that contains host op 'outer/inner/hostfn'",
    )
    assert where(g)["y"] == DEV


@pytest.mark.usefixtures("v1_control_flow")
def test_v1_inner_frame_without_host_op_stays_on_device() -> None:
    g = _v1_loops(py_in_outer=True, py_in_inner=False)
    run(g, mix_compile_mode=True)
    reasons: dict[str, set[str]] = {_frame_of(n.name): set() for n in g}
    for node in g:
        reasons[_frame_of(node.name)].add(node.meta[PLACEMENT].reason)
    assert reasons["outer"] == {"frame", "not_in_library"}
    # As the adapter: a frame is unsupported only if it (or a child) holds a host node.
    assert reasons["inner"] <= {"supported", "const_pulled"}


@pytest.mark.usefixtures("v1_control_flow")
def test_v1_frames_ignored_in_full_offload() -> None:
    g = _v1_loops(py_in_outer=False, py_in_inner=True)
    run(g)
    assert {r for n, r in short(g).items() if _frame_of(n) != "root"} == {
        "supported",
        "const_pulled",
        "not_in_library",
    }


# -- whole-graph rules and datasets ------------------------------------------------------------


def test_host_call_graph_downstream_of_outfeed_dequeue() -> None:
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    add(g, "relu", "Relu", "x", T=F32)
    add(g, "deq", "OutfeedDequeueOp", dtypes=[F32])
    add(g, "summ", "Tanh", "deq", T=F32)
    run(g)
    message = "in the host-call graph of outfeed dequeue op 'deq'"
    assert where(g) == {
        "x": (False, 4, "feed", "Placeholder: fed from the host each step"),
        "relu": DEV,
        "deq": (False, 3, "host_call_graph", message),
        "summ": (False, 3, "host_call_graph", message),
    }


def _dataset_graph(*, lookup: bool) -> Graph:
    with tf.Graph().as_default() as graph:
        keys = tf.constant(["a", "b"])
        if lookup:
            init = tf.lookup.KeyValueTensorInitializer(keys, tf.constant([1, 2], tf.int64))
            table = tf.lookup.StaticHashTable(init, -1)
            ds = tf.data.Dataset.from_tensor_slices(keys).map(table.lookup)
        else:
            ds = tf.data.Dataset.from_tensor_slices(tf.constant([1, 2], tf.int64))
        ds = ds.batch(2, drop_remainder=True)
        it = tf.compat.v1.data.make_initializable_iterator(ds)
        tf.multiply(tf.cast(it.get_next(), tf.float32), 2.0, name="model")
    return Graph.from_graph_def(graph.as_graph_def())


def test_dataset_init_part_and_get_next_without_pre_proc() -> None:
    g = _dataset_graph(lookup=False)
    run(g)
    rows = short(g)
    assert rows["MakeIterator"] == "dataset_init_graph"
    assert rows["BatchDatasetV2"] == "dataset_init_graph"
    assert rows["IteratorGetNext"] == "not_in_library"
    assert rows["IteratorV2"] == "not_in_library"
    assert rows["model"] == "supported"
    assert where(g)["MakeIterator"][3] == "in the dataset-initialisation graph of 'MakeIterator'"


def test_iterator_get_next_pair_is_candidate_with_data_pre_proc() -> None:
    g = _dataset_graph(lookup=False)
    run(g, enable_data_pre_proc=True)
    rows = where(g)
    assert rows["IteratorV2"] == (
        True,
        0,
        "supported",
        "IteratorV2: feeds an IteratorGetNext (enable_data_pre_proc)",
    )
    assert rows["IteratorGetNext"] == (
        True,
        0,
        "supported",
        "IteratorGetNext: fed by an Iterator (enable_data_pre_proc)",
    )
    assert rows["MakeIterator"][2] == "dataset_init_graph"


def test_pure_dataset_init_graph_has_no_candidates() -> None:
    with tf.Graph().as_default() as graph:
        ds = tf.data.Dataset.range(4).batch(2, drop_remainder=True)
        tf.compat.v1.data.make_initializable_iterator(ds)
    g = Graph.from_graph_def(graph.as_graph_def())
    result, _ = run(g)
    assert result.stats["device"] == 0
    assert {r for n, r in short(g).items() if g[n].op != "Const"} <= {
        "dataset_init_graph",
        "not_in_library",  # IteratorToStringHandle: not upstream of MakeIterator
    }


# -- lookup tables split across the boundary ----------------------------------------------


def test_table_split_between_device_init_and_host_pipeline() -> None:
    g = _dataset_graph(lookup=True)
    result, cfg = run(g)
    assert result.stats["table_split"] == 1
    (diag,) = cfg.diagnostics.items
    assert (diag.severity, diag.code, diag.node) == ("error", "table_split", "hash_table")
    assert diag.message == (
        "lookup table 'hash_table' (HashTableV2) is created and initialised on the device "
        "(where tables_initializer runs it) but 'MapDataset' (MapDataset) uses it on the host; "
        "the host holds its own, never initialised table, so the step fails with "
        "'Table not initialized'"
    )
    assert diag.fix == (
        "keep the table ops together: set mix_compile_mode=True so the gray table ops "
        "(HashTableV2, InitializeTableV2, LookupTableFindV2) stay on the host with the lookup "
        "in 'MapDataset'"
    )


def test_no_table_split_in_mixed_compute() -> None:
    g = _dataset_graph(lookup=True)
    result, cfg = run(g, mix_compile_mode=True)
    assert result.stats["table_split"] == 0
    assert cfg.diagnostics.items == []


def test_table_split_when_lookup_is_pushed_to_host_by_propagation() -> None:
    g = _table_graph()
    add(g, "init_keys", "Const", dtype=STR)
    add(g, "init_vals", "Const", dtype=I64)
    add(g, "init", "InitializeTableV2", "table", "init_keys", "init_vals", Tkey=STR, Tval=I64)
    add(g, "x", "Placeholder", dtype=F32)
    _py(g, "py", "x", tin=[F32], tout=[STR])
    g.set_input(g["find"], 1, TensorRef("py"))
    _, cfg = run(g, iterations_per_loop=5)
    assert short(g)["find"] == "string_edge"
    assert short(g)["table"] == "resource_edge"
    assert [(d.code, d.node) for d in cfg.diagnostics.items] == [("table_split", "table")]
    assert "but 'find' (LookupTableFindV2) uses it on the host" in cfg.diagnostics.items[0].message


# -- contract ----------------------------------------------------------------------------------


def test_every_reason_slug_is_documented_and_codes_are_vendor_codes() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[3] / "docs" / "placement.md").read_text("utf-8")
    for slug, reason in REASONS.items():
        assert f"| `{slug}` | {reason.code} |" in doc
        assert reason.code in (0, 1, 2, 3, 4)


def synthetic(n_layers: int) -> Graph:
    """An MLP-like training chain: per layer MatMul, BiasAdd, Relu, a host PyFunc every 50."""
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    prev = "x"
    for i in range(n_layers):
        add(g, f"w{i}", "Const", dtype=F32)
        add(g, f"b{i}", "Const", dtype=F32)
        add(g, f"mm{i}", "MatMul", prev, f"w{i}", T=F32)
        add(g, f"ba{i}", "BiasAdd", f"mm{i}", f"b{i}", T=F32)
        add(g, f"act{i}", "Relu", f"ba{i}", T=F32)
        prev = f"act{i}"
        if i % 50 == 0:
            _py(g, f"py{i}", prev, tin=[F32], tout=[STR])
            add(g, f"len{i}", "StringLength", f"py{i}")
            add(g, f"id{i}", "Identity", prev, ctrl=(f"len{i}",), T=F32)
            prev = f"id{i}"
    return g


@pytest.mark.slow
def test_string_edges_are_found_on_10k_nodes() -> None:
    """At scale (speed: benchmarks/graph_passes.py), every string edge is still found."""
    g = synthetic(2000)
    assert len(g) > 10_000
    cfg = EngineConfig.build(NpuOptions.from_values({"iterations_per_loop": 10}))
    ctx = PassContext(config=cfg)
    DeviceStrings().run(g, ctx)
    result = PlacementPass().run(g, ctx)
    assert result.stats["host.string_edge"] == 40
