"""The proposed fix: the user's op types for the black list, keep_dtype_scope, and why."""

from __future__ import annotations

from tf2npu.artifacts.gegraph import GeOp
from tf2npu.debug.overflow.fix import Fix, propose_fix, user_types


def test_a_plain_float16_op() -> None:
    assert propose_fix("Exp", "DT_FLOAT16", None, (), ("loss/Exp",), "t.py:9") == Fix(
        ("Exp",), ("loss/Exp",), "t.py:9", ""
    )


def test_a_fused_matmul_is_fixed_through_the_users_matmul() -> None:
    fused = GeOp("d/fused", "_FusedMatMul", 3, original_op_names=("d/MatMul", "d/BiasAdd"))
    fix = propose_fix("_FusedMatMul", "DT_FLOAT16", fused, (), ("d/MatMul", "d/BiasAdd"), "t.py:4")
    assert fix == Fix(
        ("MatMul",), ("d/MatMul", "d/BiasAdd"), "t.py:4",
        "_FusedMatMul is a fusion; its float16 comes from the MatMul it was made from "
        "(precision is decided before fusion)",
    )  # fmt: skip
    assert user_types("_FusedConv2D", None)[0] == ("Conv2D",)


def test_the_records_op_type_wins_over_the_fused_node_type() -> None:
    fused = GeOp(
        "ln", "LayerNorm", 3, original_op_names=("ln/mean", "ln/sub"), pass_name="layer_norm"
    )
    assert propose_fix("Mean", "DT_FLOAT16", fused, (), ("ln/mean",), "").black_list == ("Mean",)


def test_a_fusion_of_unknown_types_proposes_no_type_but_keep_dtype_scope() -> None:
    fused = GeOp(
        "ln", "LayerNorm", 3, original_op_names=("ln/mean", "ln/sub"), pass_name="layer_norm"
    )
    fix = propose_fix("LayerNorm", "DT_FLOAT16", fused, (), ("ln/mean", "ln/sub"), "m.py:20")
    assert fix == Fix(
        (), ("ln/mean", "ln/sub"), "m.py:20",
        "LayerNorm was made by layer_norm from ln/mean, ln/sub; the dump does not record their "
        "types: add the float16 one(s) to the black list by type",
    )  # fmt: skip


def test_an_op_that_keeps_one_original_name_is_the_users_own() -> None:
    op = GeOp("a/Exp", "Exp", 1, original_op_names=("a/Exp",))
    assert propose_fix("Exp", "DT_FLOAT16", op, (), ("a/Exp",), "").black_list == ("Exp",)


def test_an_op_that_is_not_float16_gets_no_fix() -> None:
    fix = propose_fix("Exp", "DT_FLOAT", None, (), ("a/Exp",), "t.py:1")
    assert (fix.black_list, fix.keep_dtype_ops, fix.created_at) == ((), (), "t.py:1")
    assert fix.reason == (
        "its output is DT_FLOAT, not float16: mixed precision did not cause this overflow; look "
        "at the values that reach it (input data, learning rate, loss scale)"
    )


def test_an_unknown_dtype_is_assumed_float16_and_said_so() -> None:
    fix = propose_fix("Exp", "", None, (), (), "")
    assert fix.black_list == ("Exp",)
    assert fix.reason == "the dump does not give its dtype: the fix assumes float16"


def test_a_cast_moves_its_readers() -> None:
    readers = (
        GeOp("mm", "MatMul", 4),
        GeOp("fm", "_FusedMatMul", 5, original_op_names=("d/MatMul", "d/BiasAdd")),
        GeOp("mm2", "MatMul", 6),
    )
    fix = propose_fix("Cast", "DT_FLOAT16", GeOp("c", "Cast", 3), readers, ("x",), "t.py:2")
    assert fix == Fix(
        ("MatMul",), ("mm", "d/MatMul", "d/BiasAdd", "mm2"), "",
        "a Cast the precision mode inserted: a float32 value beyond 65504 was cast to float16 "
        "for mm (MatMul), fm (_FusedMatMul), mm2 (MatMul); keep the reader(s) in float32",
    )  # fmt: skip


def test_a_cast_without_a_graph() -> None:
    fix = propose_fix("Cast", "DT_FLOAT16", None, (), ("x",), "t.py:2")
    assert (fix.black_list, fix.keep_dtype_ops) == ((), ())
    assert fix.reason.endswith(
        "no graph JSON names the op that reads it: add that op's type to the black list"
    )
