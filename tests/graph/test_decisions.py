"""Decisions: supersession rewires readers and keeps the old node; diagnostics deduplicate."""

from __future__ import annotations

import pytest

from tf2npu.errors import InternalError
from tf2npu.graph.decisions import (
    SUPERSEDED,
    Diagnostic,
    Diagnostics,
    Superseded,
    is_fetch_only,
    live_nodes,
    replacement_of,
    supersede,
)
from tf2npu.graph.ir import FunctionGraph, Graph, TensorRef


def small() -> Graph:
    """x -> a -> (b reads a:0 and a:1), c waits on a (control)."""
    g = Graph()
    x = g.add_node("x", "OpX")
    a = g.add_node("a", "OpA", [x.output()])
    g.add_node("b", "OpB", [a.output(0), a.output(1)])
    g.add_node("c", "OpC", control_inputs=["a"])
    return g


def test_supersede_rewires_data_and_control_readers_and_keeps_the_node() -> None:
    g = small()
    new = g.add_node(g.new_name("a", "fused"), "OpF", [g["x"].output()], origin=["a"])
    moved = supersede(g, g["a"], {0: new.output(0), 1: new.output(1)}, by="fusion", rule="r")
    assert moved == 3
    assert [str(r) for r in g["b"].inputs] == ["a/_tf2npu_fused", "a/_tf2npu_fused:1"]
    assert g["c"].control_inputs == ("a/_tf2npu_fused",)
    assert "a" in g
    assert g["a"].meta[SUPERSEDED] == Superseded(
        "fusion", {TensorRef("a"): new.output(0), TensorRef("a", 1): new.output(1)}, "r"
    )
    assert [n.name for n in live_nodes(g)] == ["x", "b", "c", "a/_tf2npu_fused"]
    g.lint()


def test_supersede_in_a_function_moves_ret_and_control_ret() -> None:
    f = FunctionGraph("body")
    f.args = ("x",)
    a = f.add_node("a", "OpA", [TensorRef("x")])
    f.ret["y"] = a.output(0, "out")
    f.control_ret["done"] = "a"
    new = f.add_node(f.new_name("a", "fp16"), "OpA", [TensorRef("x")], origin=["a"])
    supersede(f, a, {a.output(0, "out"): new.output(0, "out")}, by="precision")
    assert f.ret["y"] == TensorRef("a/_tf2npu_fp16", 0, "out")
    assert f.control_ret["done"] == "a/_tf2npu_fp16"


def test_replacement_of_follows_chains_and_stops_at_live_tensors() -> None:
    g = small()
    first = g.add_node(g.new_name("a", "fp16"), "OpA", [g["x"].output()], origin=["a"])
    supersede(g, g["a"], {0: first.output()}, by="precision")
    second = g.add_node(g.new_name("a", "fused"), "OpF", [g["x"].output()], origin=[first.name])
    supersede(g, first, {0: second.output()}, by="fusion")
    assert replacement_of(g, TensorRef("a")) == second.output()
    assert replacement_of(g, TensorRef("a", 1)) == TensorRef("a", 1)
    assert replacement_of(g, TensorRef("x")) == TensorRef("x")
    assert replacement_of(g, TensorRef("missing")) == TensorRef("missing")


def test_diagnostics_keep_order_drop_duplicates_and_render_the_fix() -> None:
    d = Diagnostics()
    d.error("table_split", "table created on the host", node="t", fix="enable mixed compute.")
    d.warning("w", "careful")
    d.error("table_split", "table created on the host", node="t", fix="enable mixed compute.")
    assert [i.code for i in d.items] == ["table_split", "w"]
    assert d.of("error")[0].render() == "t: table created on the host Fix: enable mixed compute."
    assert Diagnostic("info", "c", "m").render() == "m"


def test_given_diagnostics_drop_duplicates_and_a_listed_message_ends_in_its_fix() -> None:
    first = Diagnostic("warning", "w", "careful")
    d = Diagnostics([first])
    d.warning("w", "careful")
    d.info("i", "a list:\n  - x", fix="do y.")
    assert d.items == [first, Diagnostic("info", "i", "a list:\n  - x", "", "do y.")]
    assert d.items[1].render() == "a list:\n  - x\nFix: do y."


def test_supersede_rejects_a_tensor_of_another_node() -> None:
    g = small()
    with pytest.raises(InternalError, match="'a': x is not one of its outputs"):
        supersede(g, g["a"], {TensorRef("x"): TensorRef("b")}, by="fusion")


def test_a_pass_created_node_nothing_reads_is_fetch_only_and_not_live() -> None:
    g = small()
    back = g.add_node(g.new_name("a", "to_f32"), "Cast", [g["a"].output()], origin=["a"])
    assert is_fetch_only(g, back)
    assert not is_fetch_only(g, g["c"])  # an original node is never fetch-only
    assert back.name not in [n.name for n in live_nodes(g)]
    g.add_node(g.new_name("b", "user"), "OpU", [back.output()], origin=["b"])
    assert not is_fetch_only(g, back)


def test_readers_that_were_superseded_do_not_keep_a_node_live() -> None:
    g = small()
    back = g.add_node(g.new_name("a", "to_f32"), "Cast", [g["a"].output()], origin=["a"])
    old_reader = g.add_node("d", "OpD", [back.output()])
    assert not is_fetch_only(g, back)
    old_reader.meta[SUPERSEDED] = Superseded("fusion", {})
    assert is_fetch_only(g, back)


def test_a_node_a_function_returns_is_not_fetch_only() -> None:
    f = FunctionGraph("body")
    f.args = ("x",)
    back = f.add_node("x/_tf2npu_to_f32", "Cast", [TensorRef("x")], origin=["x"])
    f.ret["y"] = back.output(0, "y")
    assert not is_fetch_only(f, back)
