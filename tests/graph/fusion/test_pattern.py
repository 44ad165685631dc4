"""The pattern matcher and the refusal check, on literal IR graphs (no TensorFlow)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tf2npu.graph.decisions import PLACEMENT, SUPERSEDED, Placement, Superseded
from tf2npu.graph.fusion.pattern import Op, Var, any_of, dtype_of, match, refusal
from tf2npu.graph.ir import FunctionGraph, Graph, TensorRef

FLOAT, HALF = 1, 19


def t(dtype: int) -> dict[str, SimpleNamespace]:
    return {"T": SimpleNamespace(type=dtype)}


def chain(graph: Graph | None = None) -> Graph:
    """x -> sq = Square(x) -> out = Mul(x, sq)  (x read twice)."""
    g = graph if graph is not None else Graph()
    x = g.add_node("x", "Placeholder")
    sq = g.add_node("sq", "Square", [x.output()], attrs=t(FLOAT))
    g.add_node("out", "Mul", [sq.output(), x.output()], attrs=t(FLOAT))
    for node in g:
        node.meta[PLACEMENT] = Placement(device=True)
    return g


CUBE = Op("mul", {"Mul"}, (Var("x"), Op("square", {"Square"}, (Var("x"),))), commutative=True)


def test_commutative_match_binds_a_var_twice_to_the_same_tensor() -> None:
    g = chain()
    m = match(g, g["out"], CUBE)
    assert m is not None
    assert {k: n.name for k, n in m.nodes.items()} == {"mul": "out", "square": "sq"}
    assert m.tensors == {"x": TensorRef("x")}
    assert [n.name for n in m.interior()] == ["sq"]


def test_non_commutative_pattern_does_not_swap_operands() -> None:
    g = chain()
    strict = Op(
        "mul", {"Mul"}, (Var("x"), Op("square", {"Square"}, (Var("x"),))), commutative=False
    )
    assert match(g, g["out"], strict) is None


def test_a_var_bound_to_two_different_tensors_fails() -> None:
    g = chain()
    y = g.add_node("y", "Placeholder")
    g.set_input(g["sq"], 0, y.output())
    assert match(g, g["out"], CUBE) is None


def test_backtracking_undoes_an_early_wrong_choice() -> None:
    """Add(Mul(a, b), Mul(b, c)) where the first Mul must bind (p=a, q=b) for the second."""
    g = Graph()
    a, b, c = (g.add_node(n, "Placeholder") for n in "abc")
    m1 = g.add_node("m1", "Mul", [a.output(), b.output()])
    m2 = g.add_node("m2", "Mul", [c.output(), b.output()])
    add = g.add_node("add", "AddV2", [m1.output(), m2.output()])
    pat = Op(
        "add",
        {"AddV2"},
        (
            Op("m1", {"Mul"}, (Var("p"), Var("q")), commutative=True),
            Op("m2", {"Mul"}, (Var("q"), Var("r")), commutative=True),
        ),
    )
    m = match(g, add, pat)
    assert m is not None and m.tensors == {"p": a.output(), "q": b.output(), "r": c.output()}


def test_a_function_argument_never_matches_an_op_pattern() -> None:
    f = FunctionGraph("body")
    f.args = ("x",)
    f.add_node("sq", "Square", [TensorRef("x")])
    assert match(f, f["sq"], Op("sq", {"Square"}, (Op("p", {"Placeholder"}),))) is None


def test_the_fusible_pattern_has_no_refusal() -> None:
    g = chain()
    m = match(g, g["out"], CUBE)
    assert m is not None and refusal(g, m) is None


def refused(g: Graph) -> str | None:
    m = match(g, g["out"], CUBE)
    assert m is not None
    return refusal(g, m)


def test_refusal_reasons_name_the_node() -> None:
    g = chain()
    g["sq"].meta[PLACEMENT] = Placement(device=False, code=4, reason="not_supported")
    assert refused(g) == "sq is not placed on the device"

    g = chain()
    del g["out"].meta[PLACEMENT]
    assert refused(g) == "out is not placed on the device"

    g = chain()
    g["sq"].meta[SUPERSEDED] = Superseded("precision", {})
    assert refused(g) == "sq was already rewritten"

    g = chain()
    g["sq"].device = "/device:CPU:0"
    assert refused(g) == "the nodes have different device strings"

    g = chain()
    g["sq"].attrs = t(HALF)
    assert refused(g) == "the nodes compute in different dtypes"

    g = chain()
    g.add_node("side", "Identity", [g["sq"].output()])
    assert refused(g) == "sq is also read by side"

    g = chain()
    g.add_node("after", "NoOp", control_inputs=["sq"])
    assert refused(g) == "sq has control dependents"

    g = chain()
    g.add_node("other", "Identity", [g["out"].output(1)])
    assert refused(g) == "other reads out:1 of out"


@pytest.mark.tf
def test_an_interior_node_returned_by_a_function_is_refused() -> None:
    f = FunctionGraph("body")
    chain(f)
    f.ret["y"] = f["sq"].output(0, "y")
    m = match(f, f["out"], CUBE)
    assert m is not None and refusal(f, m) == "sq is returned by the function"


def test_exported_interior_nodes_may_have_outside_readers() -> None:
    g = chain()
    g.add_node("side", "Identity", [g["sq"].output()])
    m = match(g, g["out"], CUBE)
    assert m is not None and refusal(g, m, exported={"sq"}) is None


def test_dtype_of_reads_t_then_dtype_then_dst_t_and_dtype_first_for_random_ops() -> None:
    g = Graph()
    assert dtype_of(g.add_node("a", "Mul", attrs=t(HALF))) == HALF
    assert dtype_of(g.add_node("b", "Const", attrs={"dtype": SimpleNamespace(type=3)})) == 3
    assert dtype_of(g.add_node("c", "Cast", attrs={"DstT": SimpleNamespace(type=1)})) == 1
    random = g.add_node(
        "d", "RandomUniform", attrs={"T": SimpleNamespace(type=3), "dtype": SimpleNamespace(type=1)}
    )
    assert dtype_of(random) == 1
    assert dtype_of(g.add_node("e", "NoOp")) is None


def test_mul_and_add_swap_operands_by_default_sub_does_not() -> None:
    g = chain()
    default = Op("mul", {"Mul"}, (Var("x"), Op("square", {"Square"}, (Var("x"),))))
    assert default.swaps() and match(g, g["out"], default) is not None
    assert not Op("sub", {"Sub"}, (Var("a"), Var("b"))).swaps()
    assert Op("add", {"Add", "AddV2"}, (Var("a"), Var("b"))).swaps()


def test_any_of_tries_each_spelling_and_binds_the_one_that_matches() -> None:
    g = chain()
    spelling = any_of(
        Op("cube", {"Pow"}, (Var("x"), Var("three"))), Op("square", {"Square"}, (Var("x"),))
    )
    pat = Op("mul", {"Mul"}, (Var("x"), spelling))
    m = match(g, g["out"], pat)
    assert m is not None and {k: n.name for k, n in m.nodes.items()} == {
        "mul": "out",
        "square": "sq",
    }


def test_any_of_at_the_root_and_nested_any_of_flattens() -> None:
    g = chain()
    nested = any_of(Op("r", {"Relu"}, (Var("x"),)), any_of(CUBE))
    assert len(nested.alternatives) == 2
    m = match(g, g["out"], nested)
    assert m is not None and m.nodes["mul"].name == "out"


def test_any_of_backtracks_into_a_later_alternative_when_a_sibling_fails() -> None:
    """The first alternative binds x to the wrong tensor; the second must be tried."""
    g = Graph()
    x, y = g.add_node("x", "Placeholder"), g.add_node("y", "Placeholder")
    sq = g.add_node("sq", "Square", [y.output()])
    g.add_node("out", "Mul", [sq.output(), x.output()])
    pat = Op(
        "mul",
        {"Mul"},
        (any_of(Var("x"), Op("sq", {"Square"}, (Var("y"),))), Var("x")),
        commutative=False,
    )
    m = match(g, g["out"], pat)
    assert m is not None and m.tensors == {"x": x.output(), "y": y.output()}


def test_a_shape_reader_of_an_interior_node_is_allowed_only_when_declared() -> None:
    g = chain()
    g.add_node("shape", "Shape", [g["sq"].output()])
    m = match(g, g["out"], CUBE)
    assert m is not None
    assert refusal(g, m) == "sq is also read by shape"
    assert refusal(g, m, shaped={"sq"}) is None
    g.add_node("side", "Identity", [g["sq"].output()])
    assert refusal(g, m, shaped={"sq"}) == "sq is also read by side"
