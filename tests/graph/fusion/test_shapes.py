"""Static ranks and shapes read from the graph (no TensorFlow: literal IR graphs)."""

from __future__ import annotations

from types import SimpleNamespace

from tf2npu.graph.fusion.shapes import rank_of, static_shape
from tf2npu.graph.ir import Graph


def shape_attr(*dims: int) -> SimpleNamespace:
    proto = SimpleNamespace(unknown_rank=False, dim=[SimpleNamespace(size=d) for d in dims])
    return SimpleNamespace(shape=proto)


def const(g: Graph, name: str, values: list[int]) -> None:
    """An int32 Const vector (a reshape target, an axis list)."""
    tensor = SimpleNamespace(
        dtype=3,
        tensor_shape=SimpleNamespace(unknown_rank=False, dim=[SimpleNamespace(size=len(values))]),
        tensor_content=b"",
        int_val=values,
    )
    g.add_node(name, "Const", attrs={"value": SimpleNamespace(tensor=tensor)})


def graph() -> Graph:
    """a, b: placeholders [?, 3, 8]; w: a variable [8, 5]; a residual sum, a dense on it."""
    g = Graph()
    g.add_node("a", "Placeholder", attrs={"shape": shape_attr(-1, 3, 8)})
    g.add_node("b", "Placeholder", attrs={"shape": shape_attr(-1, 3, 8)})
    g.add_node("w", "VariableV2", attrs={"shape": shape_attr(8, 5)})
    g.add_node("w_read", "Identity", [g["w"].output()])
    g.add_node("sum", "AddV2", [g["a"].output(), g["b"].output()])
    g.add_node(
        "mean",
        "Mean",
        [g["sum"].output(), g["a"].output()],
        attrs={"keep_dims": SimpleNamespace(b=True)},
    )
    const(g, "flat", [-1, 8])
    g.add_node("x2", "Reshape", [g["sum"].output(), g["flat"].output()])
    g.add_node("mm", "MatMul", [g["x2"].output(), g["w_read"].output()])
    const(g, "tail", [5])
    g.add_node("free", "GatherV2", [g["a"].output(), g["flat"].output(), g["a"].output()])
    g.add_node("target", "ConcatV2", [g["free"].output(), g["tail"].output(), g["a"].output()])
    g.add_node("y", "Reshape", [g["mm"].output(), g["target"].output()])
    g.add_node("unknown", "Unique", [g["a"].output()])
    g.add_node("mixed", "Mul", [g["sum"].output(), g["unknown"].output()])
    return g


def test_ranks_follow_adds_reductions_reshapes_and_matmuls() -> None:
    g = graph()
    assert rank_of(g, g["sum"].output()) == 3
    assert rank_of(g, g["mean"].output()) == 3
    assert rank_of(g, g["x2"].output()) == 2
    assert rank_of(g, g["mm"].output()) == 2
    assert rank_of(g, g["y"].output()) == 3  # concat of a 2-element gather and [5]


def test_an_unknown_operand_makes_the_rank_unknown() -> None:
    g = graph()
    assert rank_of(g, g["unknown"].output()) is None
    assert rank_of(g, g["mixed"].output()) is None


def test_static_shape_reads_variables_through_their_read_identity() -> None:
    g = graph()
    assert static_shape(g, g["w_read"].output()) == [8, 5]
    assert static_shape(g, g["a"].output()) is None  # the batch dimension is unknown
    assert static_shape(g, g["tail"].output()) == [1]
    assert static_shape(g, g["sum"].output()) is None


def test_embedding_lookups_expand_dims_and_fused_ops_keep_ranks_known() -> None:
    g = graph()
    const(g, "ids_shape", [4, 16])
    g.add_node("ids", "Placeholder", attrs={"shape": shape_attr(4, 16)})
    g.add_node("emb", "GatherV2", [g["w_read"].output(), g["ids"].output(), g["tail"].output()])
    g.add_node("pos", "ExpandDims", [g["w_read"].output(), g["tail"].output()])
    g.add_node("ln", "LayerNorm", [g["sum"].output()])
    assert rank_of(g, g["emb"].output()) == 3
    assert rank_of(g, g["pos"].output()) == 3
    assert rank_of(g, g["ln"].output()) == 3
    assert rank_of(g, g["ln"].output(1)) is None  # only output 0 is followed
