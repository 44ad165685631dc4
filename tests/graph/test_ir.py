"""The graph IR: references, mutators, names, order and lint, on small literal graphs.

Tests here build graphs through the IR itself (no TensorFlow needed); proto round trips and
checks that need TF's op registry are in ``test_ir_proto.py``.
"""

from __future__ import annotations

import pytest

from tf2npu.errors import GraphError, InternalError
from tf2npu.graph.ir import (
    ORIGIN_ATTR,
    RESERVED_SUFFIX,
    FunctionGraph,
    Graph,
    TensorRef,
    is_reserved_name,
)
from tf2npu.graph.lint import CHECKS, LintError, Signature


def chain() -> Graph:
    """x -> a -> b, with c reading a and x, and d waiting on b (control)."""
    g = Graph()
    x = g.add_node("x", "NoSuchOpX")
    a = g.add_node("a", "NoSuchOpA", [x.output()])
    b = g.add_node("b", "NoSuchOpB", [a.output()])
    g.add_node("c", "NoSuchOpC", [a.output(1), x.output()])
    g.add_node("d", "NoSuchOpD", control_inputs=[b.name])
    return g


def names(nodes: object) -> list[str]:
    return [n.name for n in nodes]  # type: ignore[attr-defined]


# -- TensorRef -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("x", TensorRef("x", 0)),
        ("x:1", TensorRef("x", 1)),
        ("scope/x:12", TensorRef("scope/x", 12)),
        ("while/Less:z:0", TensorRef("while/Less", 0, "z")),
        ("split:output:2", TensorRef("split", 2, "output")),
    ],
)
def test_tensor_ref_parses_both_syntaxes_and_prints_them_back(text: str, ref: TensorRef) -> None:
    assert TensorRef.parse(text) == ref
    assert str(ref) == text


def test_tensor_ref_prints_output_zero_the_way_tf_does() -> None:
    assert str(TensorRef.parse("x:0")) == "x"


@pytest.mark.parametrize("text", ["", "^x", ":0", "x:", "x:a", "x:out:", "x::0", "a:b:1:2"])
def test_malformed_inputs_are_graph_errors(text: str) -> None:
    with pytest.raises(GraphError, match="malformed data input"):
        TensorRef.parse(text)


# -- reading and consumers ---------------------------------------------------------------
def test_consumers_follow_data_and_control_edges() -> None:
    g = chain()
    assert names(g.consumers("x")) == ["a", "c"]
    assert names(g.consumers(g["a"])) == ["b", "c"]
    assert names(g.consumers("b")) == []
    assert names(g.consumers("b", control=True)) == ["d"]
    assert [(n.name, i) for n, i in g.uses(TensorRef("a", 1))] == [("c", 0)]
    assert g["c"].inputs == (TensorRef("a", 1), TensorRef("x"))
    assert g["d"].control_inputs == ("b",)
    assert len(g) == 5 and "a" in g and g.get("zz") is None
    with pytest.raises(KeyError, match="no node 'zz' in graph"):
        g["zz"]


def test_set_input_moves_the_consumer_between_producers() -> None:
    g = chain()
    g["b"].set_input(0, TensorRef("x"))
    assert names(g.consumers("a")) == ["c"]
    assert names(g.consumers("x")) == ["a", "c", "b"]
    g.lint()


def test_a_node_reading_a_producer_twice_stays_a_consumer_until_both_edges_go() -> None:
    g = chain()
    g.set_inputs(g["c"], [TensorRef("a"), TensorRef("a", 1)])
    assert names(g.consumers("x")) == ["a"]
    g.set_input(g["c"], 0, TensorRef("x"))
    assert names(g.consumers("a")) == ["b", "c"]
    g.set_input(g["c"], 1, TensorRef("x"))
    assert names(g.consumers("a")) == ["b"]
    g.lint()


def test_replace_all_uses_rewires_exactly_that_output() -> None:
    g = chain()
    y = g.add_node(g.new_name("a", "cast"), "NoSuchOpY", [TensorRef("a")], origin=["a"])
    assert g.replace_all_uses(TensorRef("a"), y.output()) == 1  # not a:1, not y itself
    assert g["b"].inputs == (y.output(),)
    assert g["c"].inputs[0] == TensorRef("a", 1)
    assert y.inputs == (TensorRef("a"),)
    g.lint()


def test_control_inputs_add_once_and_remove() -> None:
    g = chain()
    g.add_control_input(g["d"], "a").add_control_input(g["d"], "a")
    assert g["d"].control_inputs == ("b", "a")
    g.remove_control_input(g["d"], "b").remove_control_input(g["d"], "b")
    assert g["d"].control_inputs == ("a",)
    assert names(g.consumers("b", control=True)) == []
    g.add_input(g["d"], TensorRef("c"))
    assert names(g.consumers("c")) == ["d"]
    g.lint()


def test_add_node_refuses_a_taken_name() -> None:
    with pytest.raises(InternalError, match="a node named 'a' already exists"):
        chain().add_node("a", "NoOp")


# -- erase -------------------------------------------------------------------------------
def test_erase_refuses_while_data_consumers_remain() -> None:
    g = chain()
    with pytest.raises(InternalError, match=r"cannot erase 'a': still read by 'b' and 1 more"):
        g.erase_node("a")
    assert "a" in g


def test_erase_refuses_while_a_control_consumer_remains() -> None:
    with pytest.raises(InternalError, match="cannot erase 'b': still read by 'd';"):
        chain().erase_node("b")


def test_erase_drops_the_node_and_its_input_edges() -> None:
    g = chain()
    g.erase_node("d").erase_node(g["c"])
    assert names(g) == ["x", "a", "b"]
    assert names(g.consumers("x")) == ["a"]
    assert names(g.consumers("b", control=True)) == []
    g.lint()


def test_forced_erase_leaves_dangling_inputs_that_lint_reports() -> None:
    g = chain()
    g.erase_node("a", force=True)
    with pytest.raises(LintError) as caught:
        g.lint()
    assert caught.value.check == "input-exists"
    assert "[input-exists] graph, node 'b': input 0 'a': names no node" in str(caught.value)
    assert "(and 1 more problems)" in str(caught.value)


# -- names -------------------------------------------------------------------------------
def test_new_name_uses_the_reserved_suffix_and_never_collides() -> None:
    g = chain()
    first = g.new_name("a", "cast")
    assert first == "a" + RESERVED_SUFFIX + "cast" == "a/_tf2npu_cast"
    assert g.new_name("a", "cast") == "a/_tf2npu_cast_1"  # given out, not yet added
    g.add_node("a/_tf2npu_cast_2", "NoOp", origin=["a"])
    assert g.new_name("a", "cast") == "a/_tf2npu_cast_3"
    assert is_reserved_name(first) and is_reserved_name("a/_tf2npu_cast_3")
    assert not is_reserved_name("a/_tf2npu_") and not is_reserved_name("a/cast")


@pytest.mark.parametrize("tag", ["", "a-b", "_x", "x/y"])
def test_new_name_rejects_bad_tags(tag: str) -> None:
    with pytest.raises(ValueError, match="name tag"):
        Graph().new_name("a", tag)


# -- toposort ----------------------------------------------------------------------------
def test_toposort_puts_producers_first_and_keeps_load_order_on_ties() -> None:
    g = Graph()
    g.add_node("late", "NoSuchOp", [TensorRef("early")])
    g.add_node("other", "NoSuchOp")
    g.add_node("early", "NoSuchOp", control_inputs=["other"])
    assert names(g.toposort()) == ["other", "early", "late"]
    assert names(chain().toposort()) == ["x", "a", "b", "c", "d"]


def test_toposort_names_a_node_on_the_cycle() -> None:
    g = Graph()
    g.add_node("in", "NoSuchOp")
    g.add_node("a", "NoSuchOp", [TensorRef("in"), TensorRef("c")])
    g.add_node("b", "NoSuchOp", [TensorRef("a")])
    g.add_node("c", "NoSuchOp", control_inputs=["b"])
    g.add_node("after", "NoSuchOp", [TensorRef("c")])
    with pytest.raises(GraphError, match=r"graph has a cycle through 'a': a -> b -> c -> a"):
        g.toposort()


def test_toposort_ignores_the_back_edge_of_a_v1_while_loop() -> None:
    g = Graph()
    g.add_node("enter", "Enter")
    g.add_node("merge", "Merge", [TensorRef("enter"), TensorRef("next")])
    g.add_node("body", "NoSuchOp", [TensorRef("merge")])
    g.add_node("next", "NextIteration", [TensorRef("body")])
    assert names(g.toposort()) == ["enter", "merge", "body", "next"]
    g.lint()


# -- function bodies ---------------------------------------------------------------------
def body() -> FunctionGraph:
    f = FunctionGraph("fn")
    f.args = ("x",)
    f.add_node("mul", "NoSuchOp", [TensorRef("x")])
    f.add_node("out", "NoSuchOp", [TensorRef("mul", 0, "z")])
    f.add_node("side", "NoSuchOp")
    f.ret = {"y": TensorRef("out", 0, "output")}
    f.control_ret = {"side": "side"}
    return f


def test_function_args_are_sources_and_ret_counts_as_a_use() -> None:
    f = body()
    assert f.label == "function 'fn'"
    assert names(f.consumers("x")) == ["mul"]
    with pytest.raises(InternalError, match="cannot erase 'out': still read by \"ret 'y'\""):
        f.erase_node("out")
    with pytest.raises(InternalError, match="still read by \"control_ret 'side'\""):
        f.erase_node("side")
    with pytest.raises(InternalError, match="already exists"):
        f.add_node("x", "NoOp")
    assert f.new_name("x", "t") == "x/_tf2npu_t"
    f.lint()


def test_replace_all_uses_in_a_function_updates_ret() -> None:
    f = body()
    new = f.add_node(f.new_name("out", "id"), "NoSuchOp", [TensorRef("out", 0, "output")])
    new.origin = ("out",)
    assert f.replace_all_uses(TensorRef("out", 0, "output"), new.output(0, "output")) == 1
    assert f.ret == {"y": TensorRef("out/_tf2npu_id", 0, "output")}
    f.lint()


def test_walk_visits_the_top_level_then_functions() -> None:
    g = chain()
    g.functions["fn"] = body()
    assert [x.label for x in g.walk()] == ["graph", "function 'fn'"]


# -- lint: every check -------------------------------------------------------------------
def lint_check(g: Graph, baseline: Signature | None = None) -> tuple[str, str]:
    with pytest.raises(LintError) as caught:
        g.lint(baseline)
    assert isinstance(caught.value, InternalError)
    problem = caught.value.problems[0]
    assert problem.check in CHECKS
    return problem.check, problem.node


def test_lint_input_exists() -> None:
    g = chain()
    g.add_node("e", "NoSuchOp", [TensorRef("ghost")])
    assert lint_check(g) == ("input-exists", "e")


def test_lint_control_exists() -> None:
    g = chain()
    g.add_node("e", "NoSuchOp", control_inputs=["ghost"])
    assert lint_check(g) == ("control-exists", "e")


def test_lint_function_syntax_in_a_graph_and_graph_syntax_in_a_function() -> None:
    g = chain()
    g.add_node("e", "NoSuchOp", [TensorRef("a", 0, "output")])
    assert lint_check(g) == ("input-syntax", "e")
    f = body()
    f.add_node("e", "NoSuchOp", [TensorRef("mul", 0)])
    assert lint_check(f) == ("input-syntax", "e")
    f = body()
    f.add_node("e", "NoSuchOp", [TensorRef("x", 0, "output")])
    assert lint_check(f) == ("input-syntax", "e")


def test_lint_ret_and_control_ret_exist() -> None:
    f = body()
    f.ret["z"] = TensorRef("ghost", 0, "output")
    assert lint_check(f) == ("ret-exists", "ghost")
    f = body()
    f.control_ret["gone"] = "ghost"
    assert lint_check(f) == ("ret-exists", "ghost")


def test_lint_acyclic() -> None:
    g = chain()
    g.add_control_input(g["x"], "d")
    assert lint_check(g) == ("acyclic", "x")  # x -> a -> b -> d -> x, named from x


def test_lint_unique_names_against_function_args() -> None:
    f = body()
    f.args = ("x", "mul")
    assert lint_check(f) == ("unique-names", "mul")


def test_lint_consumer_index() -> None:
    g = chain()
    g["b"]._inputs[0] = TensorRef("x")  # a pass bypassing the mutators
    assert lint_check(g) == ("consumer-index", "a")


def test_validate_raises_the_user_error_for_the_same_checks() -> None:
    g = chain()
    g.add_node("e", "NoSuchOp", [TensorRef("ghost")])
    with pytest.raises(GraphError, match=r"invalid input graph: \[input-exists\] graph, node 'e'"):
        g.validate()


def test_lint_contract_names_survive() -> None:
    g = chain()
    before = Signature.of(g)
    g.erase_node("d")
    assert lint_check(g, before) == ("kept-name", "d")


def test_lint_contract_new_nodes_need_suffix_and_origin() -> None:
    g = chain()
    before = Signature.of(g)
    g.add_node("helper", "NoSuchOp", origin=["a"])
    assert lint_check(g, before) == ("reserved-suffix", "helper")
    g = chain()
    g.add_node(g.new_name("a", "t"), "NoSuchOp")
    assert lint_check(g, before) == ("origin-attr", "a/_tf2npu_t")
    g = chain()
    g.add_node(g.new_name("a", "t"), "NoSuchOp", origin=["a"])
    g.lint(before)


def test_lint_contract_covers_function_bodies() -> None:
    g = chain()
    g.functions["fn"] = body()
    g.functions["fn"].parent = g
    before = Signature.of(g)
    assert set(before.graphs) == {"", "fn"}
    g.functions["fn"].add_node("extra", "NoSuchOp", origin=["mul"])
    with pytest.raises(LintError, match=r"\[reserved-suffix\] function 'fn', node 'extra'"):
        g.lint(before)


def test_origin_attr_name_is_reserved_too() -> None:
    assert ORIGIN_ATTR == "_tf2npu_origin"


def test_replace_all_uses_can_spare_named_consumers() -> None:
    g = chain()
    g.add_node("e", "NoSuchOp", [TensorRef("x"), TensorRef("x")])
    assert g.replace_all_uses(TensorRef("x"), TensorRef("b"), exclude=["a", g["c"]]) == 2
    assert g["a"].inputs == (TensorRef("x"),)
    assert g["e"].inputs == (TensorRef("b"), TensorRef("b"))
    g.lint()


# -- with the pass manager -------------------------------------------------------------
class InsertAfterA:
    """A toy pass: an identity after ``a``, named as the contract says unless ``bad``."""

    def __init__(self, name: str, bad: bool = False) -> None:
        from tf2npu.graph.passes import PassInfo

        self.info = PassInfo(name)
        self.bad = bad

    def run(self, graph: Graph, ctx: object) -> object:
        from tf2npu.graph.passes import PassResult

        name = "helper" if self.bad else graph.new_name("a", "id")
        node = graph.add_node(name, "NoSuchOp", [TensorRef("a")], origin=["a"])
        graph.replace_all_uses(TensorRef("a"), node.output())
        return PassResult(graph, changed=True, stats={"inserted": 1})


def test_the_pass_manager_lints_the_ir_against_its_signature() -> None:
    from tf2npu.graph.passes import PassContext, PassError, PassManager

    g = chain()
    ctx = PassContext(config=None, verify=True)
    passes = [InsertAfterA("good_one"), InsertAfterA("bad_one", bad=True)]
    with pytest.raises(PassError) as caught:
        PassManager(passes).run(g, ctx, baseline=Signature.of(g))
    message = str(caught.value)
    assert "graph pass 'bad_one' left a graph that fails lint" in message
    assert "[reserved-suffix] graph, node 'helper'" in message
    assert "passes run before it: good_one" in message


def test_lint_refuses_a_baseline_that_is_not_a_signature() -> None:
    with pytest.raises(TypeError, match="lint baseline must be a Signature, not dict"):
        chain().lint({})
