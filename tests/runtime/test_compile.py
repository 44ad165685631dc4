"""The run-time error a graph the device cannot run raises: a sentence, then a list."""

from __future__ import annotations

from tf2npu.graph.decisions import Diagnostic
from tf2npu.runtime.compile import cannot_run


def test_one_error_is_one_sentence_with_its_fix() -> None:
    error = Diagnostic("error", "table_split", "table created on the host", "t", "mix it.")
    assert cannot_run(3, [error]) == (
        "graph 3 cannot run on the device: t: table created on the host Fix: mix it."
    )


def test_several_errors_are_listed_one_per_item_with_their_own_lists_indented() -> None:
    listed = Diagnostic("error", "ref", "2 ref variables:\n  - 'a' -> 'x'\n  - 'b' -> 'y'",
                        "a", "use resource variables.")  # fmt: skip
    other = Diagnostic("error", "table_split", "table created on the host", "t")
    assert cannot_run(1, [listed, other]).splitlines() == [
        "graph 1 cannot run on the device (2 errors):",
        "- a: 2 ref variables:",
        "    - 'a' -> 'x'",
        "    - 'b' -> 'y'",
        "  Fix: use resource variables.",
        "- t: table created on the host",
    ]
