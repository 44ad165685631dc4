"""The terminal summary's precision rows: counts by dtype, reason and GE type, chosen ops named."""

from __future__ import annotations

from typing import Any

from tf2npu.artifacts.run_summary import RunSummary
from tf2npu.cli.precision_view import precision_summary_rows


def row(op: str, op_type: str, dtype: str, reason: str) -> dict[str, Any]:
    return {"op": op, "op_type": op_type, "tf_type": op_type, "dtype": dtype, "reason": reason}


def lines(summary: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (label, text.plain) for label, text in precision_summary_rows(RunSummary.from_json(summary))
    ]


def test_groups_by_dtype_and_reason_lowered_first_and_names_the_mixlist_ops() -> None:
    summary = {
        "sessions": 1,
        "precision": [
            row("l0/mm", "MatMulV2", "float16", "allow_list"),
            row("l0/sm", "SoftmaxV2", "float32", "mixlist_deny"),
            row("l1/mm", "MatMulV2", "float16", "allow_list"),
            row("l0/add", "Add", "float16", "follows_lowered"),
            row("l0/bmm", "BatchMatMulV2", "float16", "allow_list"),
            row("l1/sm", "SoftmaxV2", "float32", "mixlist_deny"),
            row("loss", "ReduceSumD", "float32", "deny_list"),
            row("w", "VariableV2", "float32", "no_lowered_input"),
            row("c", "Const", "float32", "no_lowered_input"),
            row("apply", "ApplyGradientDescent", "float32", "variable_dtype"),
        ],
    }
    assert lines(summary) == [
        ("precision", "float16, allow list: 3 (MatMulV2 x2, BatchMatMulV2 x1)"),
        ("", "float16, follows its lower-precision input: 1 (Add x1)"),
        ("", "float32, black list by modify_mixlist: 2 (SoftmaxV2 x2): l0/sm, l1/sm"),
        ("", "float32, deny list: 1 (ReduceSumD x1)"),
        (
            "",
            "float32, nothing lowered them: 3 (no lower-precision input 2, float32 variable "
            "reference 1)",
        ),
    ]


def test_long_groups_are_cut_short() -> None:
    ops = [row(f"k{i}", f"T{i % 6}", "float32", "keep_dtype_scope") for i in range(7)]
    ((_, text),) = lines({"sessions": 1, "precision": ops})
    assert text == (
        "float32, keep_dtype_scope: 7 (T0 x2, T1 x1, T2 x1, T3 x1, 2 more types): "
        "k0, k1, k2, k3, k4 and 2 more"
    )


def test_no_npu_session_no_rows_and_an_old_summary_says_none_judged() -> None:
    assert lines({"sessions": 0, "precision": [row("a", "Add", "float16", "x")]}) == []
    assert lines({"sessions": 2}) == [("precision", "no float op judged")]
