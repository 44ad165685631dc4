"""The run-time error a graph the device cannot run raises: a sentence, then a list."""

from __future__ import annotations

from pathlib import Path

import pytest

from tf2npu.config.env import HALF_ROUND_ENV
from tf2npu.graph.decisions import Diagnostic
from tf2npu.graph.passes.half_via_fp32 import HALF_ROUND_OP
from tf2npu.runtime.compile import cannot_run
from tf2npu.runtime.native import HALF_ROUND_LIBRARY


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


# -- the native float16 rounding ------------------------------------------------------------


def _mul_graph_def() -> object:
    """x (float32) → half (Cast) → big (float16 Mul) → out (Cast to float32)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
        half = tf.cast(x, tf.float16, name="half")
        big = tf.multiply(half, tf.constant(3.0, tf.float16), name="big")
        tf.cast(big, tf.float32, name="out")
    return graph.as_graph_def()


def _lowered_ops(execution: str = "", **options: object) -> dict[str, str]:
    from tf2npu.config.options import NpuOptions
    from tf2npu.runtime.compile import compile_graph
    from tf2npu.runtime.settings import RuntimeSettings

    values = {"precision_mode": "must_keep_origin_dtype", **options}
    settings = RuntimeSettings(execution=execution) if execution else RuntimeSettings()
    compiled = compile_graph(
        _mul_graph_def(), NpuOptions.from_values(values), settings, graph_num=1
    )
    return {node.name: node.op for node in compiled.graph_def.node}


@pytest.mark.skipif(not HALF_ROUND_LIBRARY.is_file(), reason="half_round.so is not built")
def test_a_session_without_dumps_rounds_with_the_native_op(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(HALF_ROUND_ENV, raising=False)
    ops = _lowered_ops()
    assert ops["big/_tf2npu_f32_round"] == HALF_ROUND_OP
    assert ops["out"] == "Identity" and ops["big"] == ops["half"] == "Cast"  # names kept


@pytest.mark.parametrize("dump", [{"enable_dump": True}, {"enable_dump_debug": True}])
def test_a_dumping_session_keeps_the_cast_pairs(dump: dict[str, object], tmp_path: Path) -> None:
    """A dump takes the ops a run executes: the float16 Casts must run, as before."""
    ops = _lowered_ops(dump_path=str(tmp_path), **dump)
    assert HALF_ROUND_OP not in ops.values()
    assert ops["out"] == "Cast"


def test_xla_execution_keeps_the_cast_pairs() -> None:
    assert HALF_ROUND_OP not in _lowered_ops(execution="xla").values()


def test_the_environment_turns_the_native_op_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HALF_ROUND_ENV, "0")
    assert HALF_ROUND_OP not in _lowered_ops().values()
