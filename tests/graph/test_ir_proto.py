"""The IR over real protos: literal GraphDefs/FunctionDefs and graphs TensorFlow builds.

Round trips must be exact: ``Graph.from_graph_def(gd).to_graph_def() == gd`` and the same
deterministic bytes.
"""

from __future__ import annotations

from typing import Any

import pytest

from tf2npu.errors import GraphError
from tf2npu.graph.ir import ORIGIN_ATTR, Graph, TensorRef
from tf2npu.graph.lint import LintError, Signature

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
text_format = pytest.importorskip("google.protobuf.text_format")

LITERAL = """
versions { producer: 1087 min_consumer: 12 }
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "split/dim" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
node { name: "split" op: "Split" input: "split/dim" input: "x" device: "/device:CPU:0"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "num_split" value { i: 2 } } }
node { name: "init" op: "NoOp" }
node { name: "y" op: "AddV2" input: "split" input: "split:1" input: "^init"
  attr { key: "T" value { type: DT_FLOAT } } }
node { name: "call" op: "double" input: "y" }
library {
  function {
    signature { name: "double" input_arg { name: "a" type: DT_FLOAT }
                output_arg { name: "out" type: DT_FLOAT } }
    node_def { name: "two" op: "Const"
      attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 2 } } } }
    node_def { name: "mul" op: "Mul" input: "a" input: "two:output:0"
      attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "out" value: "mul:z:0" }
  }
}
"""


def parse(text: str) -> Any:
    return text_format.Parse(text, tf.compat.v1.GraphDef())


def assert_round_trip(gd: Any) -> Graph:
    graph = Graph.from_graph_def(gd)
    out = graph.to_graph_def()
    assert out == gd
    assert out.SerializeToString(deterministic=True) == gd.SerializeToString(deterministic=True)
    graph.lint(Signature.of(graph))
    return graph


# -- literal graphs ----------------------------------------------------------------------
def test_literal_graph_round_trips_and_reads_both_input_syntaxes() -> None:
    graph = assert_round_trip(parse(LITERAL))
    assert graph["y"].inputs == (TensorRef("split"), TensorRef("split", 1))
    assert graph["y"].control_inputs == ("init",)
    assert graph["split"].device == "/device:CPU:0"
    assert graph["split"].attrs["num_split"].i == 2
    double = graph.functions["double"]
    assert double.args == ("a",)
    assert double["mul"].inputs == (TensorRef("a"), TensorRef("two", 0, "output"))
    assert double.ret == {"out": TensorRef("mul", 0, "z")}
    assert [n.name for n in graph.consumers("split")] == ["y"]


def test_signature_knows_output_dtypes_from_the_registry_and_the_library() -> None:
    sig = Signature.of(Graph.from_graph_def(parse(LITERAL))).graphs
    f32, i32 = tf.float32.as_datatype_enum, tf.int32.as_datatype_enum
    assert sig[""]["split"] == (f32, f32)
    assert sig[""]["split/dim"] == (i32,)
    assert sig[""]["init"] == ()
    assert sig[""]["call"] == (f32,)
    assert sig["double"]["mul"] == (f32,)


def test_lint_output_index_uses_the_op_registry() -> None:
    graph = Graph.from_graph_def(parse(LITERAL))
    graph.set_input(graph["y"], 1, TensorRef("split", 2))
    with pytest.raises(LintError, match=r"\[output-index\] graph, node 'y': input 1 'split:2'"):
        graph.lint()


def test_lint_output_arg_names_in_function_bodies() -> None:
    graph = Graph.from_graph_def(parse(LITERAL))
    double = graph.functions["double"]
    double.ret["out"] = TensorRef("mul", 0, "output")
    with pytest.raises(LintError, match=r"Mul has no output arg 'output' \(z\)"):
        graph.lint()
    double.ret["out"] = TensorRef("mul", 1, "z")
    with pytest.raises(LintError, match="Mul output arg 'z' has 1 tensors"):
        graph.lint()


def test_lint_kept_outputs_after_a_dtype_change() -> None:
    graph = Graph.from_graph_def(parse(LITERAL))
    before = Signature.of(graph)
    graph["split/dim"].attrs["dtype"] = tf.compat.v1.AttrValue(type=tf.int64.as_datatype_enum)
    with pytest.raises(LintError, match=r"\[kept-outputs\] graph, node 'split/dim'"):
        graph.lint(before)


def test_pass_created_nodes_export_their_origin_and_load_back() -> None:
    graph = Graph.from_graph_def(parse(LITERAL))
    before = Signature.of(graph)
    cast = graph.add_node(
        graph.new_name("y", "cast"),
        "Cast",
        [graph["y"].output()],
        attrs={
            "SrcT": tf.compat.v1.AttrValue(type=tf.float32.as_datatype_enum),
            "DstT": tf.compat.v1.AttrValue(type=tf.float16.as_datatype_enum),
        },
        origin=["y"],
    )
    assert graph.replace_all_uses(graph["y"].output(), cast.output()) == 1
    graph.lint(before)
    exported = graph.to_graph_def()
    node = next(n for n in exported.node if n.name == "y/_tf2npu_cast")
    assert list(node.attr[ORIGIN_ATTR].list.s) == [b"y"]
    assert [n.input for n in exported.node if n.name == "call"] == [["y/_tf2npu_cast"]]
    again = Graph.from_graph_def(exported)
    assert again["y/_tf2npu_cast"].origin == ("y",)
    assert ORIGIN_ATTR not in again["y/_tf2npu_cast"].attrs
    assert again.to_graph_def() == exported


def test_from_graph_def_copies_its_argument() -> None:
    gd = parse(LITERAL)
    graph = Graph.from_graph_def(gd)
    gd.node[2].attr["num_split"].i = 7
    assert graph["split"].attrs["num_split"].i == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'node { name: "a" op: "NoOp" } node { name: "a" op: "NoOp" }',
            "node name 'a' is used twice",
        ),
        (
            'node { name: "a" op: "NoOp" } node { name: "b" op: "Identity" input: "^a" input: "a" }',
            "data input 'a' comes after a control input",
        ),
        ('node { name: "b" op: "Identity" input: "a:out:0" }', "uses the function-body syntax"),
        ('node { name: "b" op: "Identity" input: "a:x" }', "malformed data input 'a:x'"),
        (
            'library { function { signature { name: "f" } } function { signature { name: "f" } } }',
            "defines 'f' twice",
        ),
        (
            'library { function { signature { name: "f" input_arg { name: "a" type: DT_FLOAT } }'
            ' node_def { name: "a" op: "NoOp" } } }',
            "function 'f': node name 'a' is used twice",
        ),
        (
            'library { function { signature { name: "f" } ret { key: "o" value: "n:o:" } } }',
            "function 'f', 'o': malformed data input",
        ),
    ],
)
def test_bad_graph_defs_are_user_errors(text: str, message: str) -> None:
    with pytest.raises(GraphError, match=message):
        Graph.from_graph_def(parse(text))


def test_a_new_graph_exports_without_a_template() -> None:
    graph = Graph()
    graph.add_node("a", "NoOp")
    assert graph.to_graph_def() == parse('node { name: "a" op: "NoOp" }')


# -- graphs TensorFlow builds ------------------------------------------------------------
def mlp_training_graph() -> Any:
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 8], name="x")
        labels = v1.placeholder(tf.int32, [None], name="labels")
        w1, b1 = v1.get_variable("w1", [8, 16]), v1.get_variable("b1", [16])
        w2, b2 = v1.get_variable("w2", [16, 4]), v1.get_variable("b2", [4])
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
        logits = tf.nn.bias_add(tf.matmul(h, w2), b2)
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        v1.train.AdamOptimizer(0.01).minimize(
            loss, global_step=v1.train.get_or_create_global_step()
        )
        v1.global_variables_initializer()
    return g.as_graph_def()


def while_v2_function_graph() -> Any:
    @tf.function(autograph=False)
    def loop(x: Any) -> Any:
        return tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 2.0), [0, x])[1]

    return loop.get_concrete_function(tf.TensorSpec([2], tf.float32)).graph.as_graph_def()


def control_and_multi_output_graph() -> Any:
    """Control deps, multi-output ops, and TF 1.15-style (v1) cond and while_loop: cycles."""
    g = tf.Graph()
    v2 = tf.compat.v1.control_flow_v2_enabled()
    tf.compat.v1.disable_control_flow_v2()
    try:
        build_control_and_multi_output(g)
    finally:
        if v2:
            tf.compat.v1.enable_control_flow_v2()
    return g.as_graph_def()


def build_control_and_multi_output(g: Any) -> None:
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [6], name="x")
        a, b = tf.split(x, 2)
        uniq, idx = tf.unique(tf.cast(x, tf.int32))
        with tf.control_dependencies([uniq, idx]):
            s = tf.add(a, b, name="s")
        tf.compat.v1.cond(tf.reduce_sum(s) > 0, lambda: s, lambda: -s)  # cond v1: Switch/Merge
        tf.compat.v1.while_loop(lambda i: i < 5, lambda i: i + 1, [tf.constant(0)])  # v1 loop


@pytest.mark.parametrize(
    "build", [mlp_training_graph, while_v2_function_graph, control_and_multi_output_graph]
)
def test_graphs_tf_builds_round_trip_exactly_and_lint_clean(build: Any) -> None:
    gd = build()
    graph = assert_round_trip(gd)
    assert len(graph.toposort()) == len(graph)
    for body in graph.functions.values():
        assert len(body.toposort()) == len(body)


def test_v1_control_flow_keeps_its_loop_and_is_ordered() -> None:
    graph = Graph.from_graph_def(control_and_multi_output_graph())
    ops = {n.op for n in graph}
    assert {"Enter", "Merge", "NextIteration", "Switch", "Exit", "Unique", "Split"} <= ops
    order = [n.name for n in graph.toposort()]
    merge = next(n for n in graph if n.op == "Merge" and n.name.startswith("while"))
    enter = graph[merge.inputs[0].node]
    assert order.index(enter.name) < order.index(merge.name)


def test_mlp_graph_has_the_optimizer_and_multi_output_edges() -> None:
    graph = Graph.from_graph_def(mlp_training_graph())
    ops = {n.op for n in graph}
    assert {"MatMul", "ResourceApplyAdam", "SparseSoftmaxCrossEntropyWithLogits"} <= ops
    xent = next(n for n in graph if n.op == "SparseSoftmaxCrossEntropyWithLogits")
    assert any(r.index == 1 for c in graph.consumers(xent) for r in c.inputs if r.node == xent.name)


def test_while_v2_bodies_are_function_graphs_passes_can_walk() -> None:
    graph = Graph.from_graph_def(while_v2_function_graph())
    assert len(graph.functions) == 2
    bodies = [f for f in graph.functions.values() if any(n.op == "Mul" for n in f)]
    assert len(bodies) == 1
    body = bodies[0]
    mul = next(n for n in body if n.op == "Mul")
    assert any(r.node in body.args for r in mul.inputs)
    assert any(r.output_arg == "output" for r in mul.inputs)
    # A pass inside the body: insert an Identity after the Mul; names and signatures survive.
    before = Signature.of(graph)
    ident = body.add_node(
        body.new_name(mul.name, "id"),
        "Identity",
        [mul.output(0, "z")],
        attrs={"T": mul.attrs["T"]},
        origin=[mul.name],
    )
    assert body.replace_all_uses(mul.output(0, "z"), ident.output(0, "output")) >= 1
    graph.lint(before)
    again = Graph.from_graph_def(graph.to_graph_def())
    assert again.functions[body.name][ident.name].origin == (mul.name,)


def test_node_fields_the_ir_does_not_model_survive() -> None:
    gd = parse(
        'node { name: "a" op: "NoOp" experimental_debug_info { original_node_names: "orig" }'
        " experimental_type { type_id: TFT_PRODUCT } }"
        ' node { name: "b" op: "NoOp" input: "^a" }'
        ' library { gradient { function_name: "f" gradient_func: "g" } }'
        ' debug_info { files: "model.py" }'
    )
    assert_round_trip(gd)


def test_an_empty_library_stays_present() -> None:
    assert_round_trip(parse('node { name: "a" op: "NoOp" } library { }'))
    assert (
        not Graph.from_graph_def(parse('node { name: "a" op: "NoOp" }'))
        .to_graph_def()
        .HasField("library")
    )
