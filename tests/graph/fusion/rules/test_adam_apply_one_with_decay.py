"""adam_apply_one_with_decay: BERT's Adam update with weight decay → AdamApplyOneWithDecay."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.decisions import replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "adam_apply_one_with_decay"
INIT = ("param/Assign", "m/Assign", "v/Assign")


def test_decayed_update_becomes_one_fused_op(fx, rand, adam) -> None:
    gd = fx.graph_def(lambda: adam(decay=True))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1 and out.stats["adam_apply_one"] == 0
    ref = replacement_of(out.graph, TensorRef("next_param"))
    fused = out.graph[ref.node]
    assert fused.op == "AdamApplyOneWithDecay" and ref.index == 2
    assert out.graph[fused.inputs[-1].node].op == "Const"  # weight_decay_rate
    feeds = {"grad": rand(4, 3), "lr": np.float32(0.01)}
    before, after = fx.compare(gd, out, "next_param", feeds, INIT)
    np.testing.assert_array_equal(after, before)


def test_the_plain_rule_does_not_take_a_decayed_update(fx, adam) -> None:
    out = fx.fuse(fx.graph_def(lambda: adam(decay=True)), switch=fx.switch_off(RULE))
    assert out.stats["adam_apply_one"] == 0


def test_another_reader_of_the_update_blocks_it(fx, adam) -> None:
    assert fx.fuse(fx.graph_def(lambda: adam(decay=True, extra=True))).stats[RULE] == 0


def test_a_host_node_blocks_it(fx, adam) -> None:
    assert fx.fuse(fx.graph_def(lambda: adam(decay=True)), host={"mul_4"}).stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "AdamApplyOneWithDecayRuleCond3"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, adam, key) -> None:
    out = fx.fuse(fx.graph_def(lambda: adam(decay=True)), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == ["next_param"]
