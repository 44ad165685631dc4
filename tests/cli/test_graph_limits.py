"""Function-nesting depth of a GraphDef's library, measured without recursion."""

from __future__ import annotations

import pytest

from tf2npu.cli.graph_limits import MAX_FUNCTION_DEPTH, check_function_depth, deepest_call_chain
from tf2npu.errors import GraphError

graph_pb2 = pytest.importorskip("tensorflow.core.framework.graph_pb2")


def library(calls: dict[str, list[str]], func_attr: bool = False) -> object:
    graph = graph_pb2.GraphDef()
    for name, callees in calls.items():
        function = graph.library.function.add()
        function.signature.name = name
        for i, callee in enumerate(callees):
            if func_attr:
                node = function.node_def.add(name=f"n{i}", op="PartitionedCall")
                node.attr["f"].func.name = callee
            else:
                function.node_def.add(name=f"n{i}", op=callee)
    return graph


def test_longest_chain() -> None:
    graph = library({"a": ["b", "c"], "b": ["c"], "c": ["Identity"], "d": []})
    assert deepest_call_chain(graph) == ["a", "b", "c"]


def test_calls_through_func_attributes_count() -> None:
    assert deepest_call_chain(library({"a": ["b"], "b": []}, func_attr=True)) == ["a", "b"]


def test_cycles_are_cut() -> None:
    assert len(deepest_call_chain(library({"a": ["b"], "b": ["a"]}))) == 2


def test_limit() -> None:
    names = [f"f{i}" for i in range(MAX_FUNCTION_DEPTH + 1)]
    deep = library({n: names[i + 1 : i + 2] for i, n in enumerate(names)})
    with pytest.raises(GraphError) as err:
        check_function_depth(deep, "g.pb")
    assert str(err.value) == (
        "graph file 'g.pb': its functions call each other 201 levels deep (f0 -> f1 -> f2 -> "
        "... -> f200); tf2npu graph inspect follows at most 200 levels; inline the nested "
        "functions (e.g. freeze the graph) or inspect a part of it"
    )
    check_function_depth(library({n: [] for n in names}), "flat.pb")
