"""recognize(): emitted NPU-op calls become NPU-op nodes again; the engine sees and lowers them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tf2npu.errors import GraphError
from tf2npu.graph.ir import Graph
from tf2npu.graph.npu_ops import FUNCTION_SUFFIX, NPU_OP_META, NPU_OPS, materialize, recognize
from tf2npu.graph.npu_ops.opdef import DT_FLOAT, DT_INT32

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
AttrValue = pytest.importorskip("tensorflow.core.framework.attr_value_pb2").AttrValue


def _client_graph_def() -> object:
    """x → gelu → dropout(0.5, seed 7) → out, gradients gx; ``_without_npu_compile`` on gelu."""
    from npu_bridge.estimator import npu_ops
    from npu_bridge.estimator.npu_unary_ops import npu_unary_ops

    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
        with graph._attr_scope({"_without_npu_compile": AttrValue(b=True)}):
            y = npu_unary_ops.gelu(x)
        out = tf.identity(npu_ops.dropout(y, 0.5, seed=7), name="out")
        tf.identity(tf.gradients(out, x)[0], name="gx")
        return graph.as_graph_def()


def test_calls_become_npu_op_nodes_with_their_attrs() -> None:
    graph = Graph.from_graph_def(_client_graph_def())
    assert recognize(graph) == 5
    assert {node.name: node.op for node in graph if node.op in NPU_OPS} == {
        "Gelu": "Gelu",
        "DropOutGenMask": "DropOutGenMask",
        "DropOutDoMask": "DropOutDoMask",
        "gradients/DropOutDoMask_grad/DropOutDoMask": "DropOutDoMask",
        "gradients/Gelu_grad/GeluGrad": "GeluGrad",
    }
    gen = graph["DropOutGenMask"]
    assert gen.attrs == {
        "T": AttrValue(type=DT_FLOAT),
        "seed": AttrValue(i=87654321),
        "seed2": AttrValue(i=7),
        "Tshape": AttrValue(type=DT_INT32),
        "_gradient_op_type": AttrValue(s=b"tf2npu:DropOutGenMask"),
    }
    assert graph["Gelu"].attrs["_without_npu_compile"] == AttrValue(b=True)  # other private kept
    assert graph.functions == {}  # nothing calls the CPU functions any more
    graph.lint()
    assert recognize(graph) == 0


def test_materialize_after_recognize_runs_like_the_client_graph() -> None:
    original = _client_graph_def()
    graph = Graph.from_graph_def(original)
    names = sorted(graph.functions)
    recognize(graph)
    assert materialize(graph) == 5
    assert sorted(graph.functions) == names  # the same deterministic names, no duplicates
    x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8)
    results = []
    for graph_def in (original, graph.to_graph_def()):
        with tf.Graph().as_default() as tf_graph:
            tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=tf_graph) as session:
            results.append(session.run(["out:0", "gx:0"], {"x:0": x}))
    # Same functions, same seeds: even the first dropout mask of a fresh session is the same.
    assert 0 < np.count_nonzero(results[0][0]) < x.size
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_function_still_called_by_an_unmarked_node_is_kept() -> None:
    graph = Graph.from_graph_def(_client_graph_def())
    gelu = graph["Gelu"]
    other = graph.add_node("plain_call", gelu.op, [gelu.inputs[0]])
    assert recognize(graph) == 5
    assert list(graph.functions) == [other.op] and other.op.startswith("Gelu_DT_FLOAT_")


@pytest.mark.parametrize("module", ["tf2npu.graph.npu_ops", "tf2npu.client.ops"])
def test_importing_recognize_and_the_client_does_not_import_tensorflow(module: str) -> None:
    code = (
        f"import sys, {module}; from tf2npu.graph.npu_ops import recognize; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_other_nodes_are_untouched() -> None:
    from npu_bridge.estimator import npu_ops

    with tf.Graph().as_default() as tf_graph:
        npu_ops.initialize_system()
        tf.constant(1.0, name="c")
    graph = Graph.from_graph_def(tf_graph.as_graph_def())
    before = graph.to_graph_def()
    assert recognize(graph) == 0
    assert graph.to_graph_def() == before


def test_a_marked_call_without_its_type_attr_is_a_graph_error() -> None:
    graph = Graph.from_graph_def(_client_graph_def())
    del graph["Gelu"].attrs["_npu_attr_T"]
    with pytest.raises(
        GraphError,
        match=r"node 'Gelu': a call of Gelu_DT_FLOAT_\w+ marked as NPU "
        r"op Gelu lacks '_npu_attr_T'",
    ):
        recognize(graph)


def test_a_marked_call_with_a_bad_attr_is_a_graph_error() -> None:
    graph = Graph.from_graph_def(_client_graph_def())
    graph["DropOutGenMask"].attrs["_npu_attr_seed"] = AttrValue(f=1.5)
    with pytest.raises(
        GraphError,
        match=r"node 'DropOutGenMask': NPU op DropOutGenMask: attr "
        r"'seed' holds 'f'",
    ):
        recognize(graph)


def test_the_engine_sees_the_npu_ops_then_lowers_to_what_the_client_graph_computes() -> None:
    from tf2npu.config.options import NpuOptions
    from tf2npu.graph.engine import run_engine

    original = _client_graph_def()
    decided = run_engine(
        Graph.from_graph_def(original), NpuOptions.from_values({}), disabled=frozenset({"lowering"})
    ).graph
    assert {
        decided[n].op
        for n in ("Gelu", "gradients/Gelu_grad/GeluGrad", "DropOutGenMask", "DropOutDoMask")
    } == {"Gelu", "GeluGrad", "DropOutGenMask", "DropOutDoMask"}
    assert decided.functions == {}
    for name in ("DropOutGenMask", "DropOutDoMask", "gradients/Gelu_grad/GeluGrad"):
        placement = decided[name].meta["placement"]
        assert placement.device is True and placement.reason == "supported"

    run = run_engine(Graph.from_graph_def(original), NpuOptions.from_values({}))
    assert run.npu_ops_recognized == 5
    gelu = run.graph["Gelu"]
    assert gelu.meta[NPU_OP_META] == "Gelu" and gelu.op.startswith("Gelu_DT_FLOAT_")
    assert gelu.meta["placement"].device is True
    x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8)
    results = []
    for graph_def in (original, run.graph.to_graph_def()):
        with tf.Graph().as_default() as tf_graph:
            tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=tf_graph) as session:
            results.append(session.run(["out:0", "gx:0"], {"x:0": x}))
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.slow
def test_a_recurrent_op_is_recognised_with_its_loop_functions_dropped_then_lowered_again() -> None:
    from npu_bridge.estimator.npu.npu_dynamic_rnn import DynamicRNN

    x_value = np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 2, 4)
    with tf.Graph().as_default() as tf_graph:
        tf.compat.v1.set_random_seed(1)
        x = tf.compat.v1.placeholder(tf.float32, [3, 2, 4], name="x")
        y = DynamicRNN(5, tf.float32, forget_bias=1.0)(x)[0]
        tf.identity(tf.gradients(tf.reduce_sum(y), x)[0], name="gx")
        tf.identity(y, name="y")
        init = tf.compat.v1.global_variables_initializer().name
    original = tf_graph.as_graph_def()
    graph = Graph.from_graph_def(original)
    ours = sorted(name for name in graph.functions if name.startswith("DynamicRnn_DT_FLOAT_"))
    assert len(ours) == 3 and any("while_body" in name for name in ours)  # the op's tf.scan
    assert all(name.endswith(FUNCTION_SUFFIX) for name in graph.functions)
    gradient = set(graph.functions) - set(ours)  # the BodyGrad function and its loops
    assert any(name.startswith("DynamicRnnBodyGrad_DT_FLOAT_") for name in gradient)
    assert recognize(graph) == 1
    node = graph["dynamic_rnn/DynamicRnn"]
    assert node.op == "DynamicRnn" and node.attrs["forget_bias"] == AttrValue(f=1.0)
    assert node.attrs["direction"] == AttrValue(s=b"UNIDIRECTIONAL")
    assert set(graph.functions) == gradient  # the op's function and its cond/body: gone
    graph.lint()
    assert materialize(graph) == 1
    results = []
    for graph_def in (original, graph.to_graph_def()):
        with tf.Graph().as_default() as imported:
            tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=imported) as session:
            session.run(init)
            results.append(session.run(["y:0", "gx:0"], {"x:0": x_value}))
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_array_equal(got, want)
