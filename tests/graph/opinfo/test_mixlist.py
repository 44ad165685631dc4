"""``modify_mixlist`` names resolved to TF op types: GE names, conflicts, unmatched names."""

from __future__ import annotations

import pytest

from tf2npu.config.mixlist import Mixlist
from tf2npu.config.precision import PrecisionClass
from tf2npu.errors import ConfigError
from tf2npu.graph.decisions import Diagnostics
from tf2npu.graph.opinfo import load_default
from tf2npu.graph.opinfo.mixlist import Resolved, apply, resolve

A, D, G = PrecisionClass.ALLOW, PrecisionClass.DENY, PrecisionClass.GRAY


def edits(text: str) -> Mixlist:
    return Mixlist.parse(text)


def test_ge_names_become_tf_op_types() -> None:
    got = resolve(
        edits(
            '{"black-list": {"to-add": ["ReduceSumD"]}, "white-list": {"to-add": ["SoftmaxV2"]}}'
        ),
        load_default(),
    )
    assert got == Resolved(Mixlist(added=(("Sum", D), ("Softmax", A))))


def test_a_ge_name_shared_by_several_tf_ops_moves_them_all() -> None:
    got = resolve(edits('{"white-list": {"to-remove": ["BatchMatMul"]}}'), load_default())
    assert got.mixlist.removed == ((A, "BatchMatMul"), (A, "BatchMatMulV2"))


def test_tf_names_still_work() -> None:
    got = resolve(edits('{"black-list": {"to-add": ["Sum", "MatMul"]}}'), load_default())
    assert got == Resolved(Mixlist(added=(("Sum", D), ("MatMul", D))))


def test_two_names_for_one_op_in_two_lists_is_an_error() -> None:
    text = '{"white-list": {"to-add": ["MatMul"]}, "black-list": {"to-add": ["MatMulV2"]}}'
    with pytest.raises(ConfigError) as caught:
        resolve(edits(text), load_default())
    assert str(caught.value) == (
        "modify_mixlist: 'MatMul' (white-list) and 'MatMulV2' (black-list) both denote the TF "
        "op type 'MatMul'; add it to one list only"
    )


def test_two_names_for_one_op_in_the_same_list_are_fine() -> None:
    got = resolve(edits('{"black-list": {"to-add": ["MatMul", "MatMulV2"]}}'), load_default())
    assert got.mixlist.added == (("MatMul", D),)


def test_apply_moves_classes_and_warns_about_unmatched_names() -> None:
    library = load_default()
    classes = {info.op: info.precision for info in library}
    diagnostics = Diagnostics()
    text = '{"black-list": {"to-add": ["ReduceSum", "MyOp"], "to-remove": ["L2Loss"]}}'
    result = apply(edits(text), library, classes, diagnostics)
    assert (classes["Sum"], classes["L2Loss"]) == (G, D)  # the input is not changed
    assert (result["Sum"], result["L2Loss"], result["MyOp"]) == (G, G, D)
    first, second = diagnostics.of("warning")
    assert (first.code, first.message) == (
        "mixlist_unknown_op",
        "modify_mixlist names 'ReduceSum', which is neither a TF op type nor the GE op type of "
        "one in the op library; it changes nothing",
    )
    assert first.fix == "write 'ReduceSumD' (the GE op type of TF Sum)"
    assert (
        second.fix == "write the GE op type (as in the ops-info file) or the TF op type of the op"
    )
