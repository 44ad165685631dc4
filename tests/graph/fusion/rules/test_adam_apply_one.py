"""adam_apply_one: BERT's Adam update without weight decay → AdamApplyOne."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "adam_apply_one"
INIT = ("param/Assign", "m/Assign", "v/Assign")


def test_adam_update_becomes_one_fused_op_feeding_the_assigns(fx, rand, adam) -> None:
    gd = fx.graph_def(adam)
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1 and sum(out.stats.values()) == 1
    ref = replacement_of(out.graph, TensorRef("next_param"))
    fused = out.graph[ref.node]
    assert fused.op == "AdamApplyOne" and ref.index == 2
    assert [r.node for r in fused.inputs][:5] == ["grad", "v/read", "m/read", "param/read", "lr"]
    written = {
        a.inputs[0].node: a.inputs[1]
        for a in out.graph
        if a.op == "Assign" and not a.name.endswith("/Assign")
    }
    assert written == {"v": fused.output(0), "m": fused.output(1), "param": fused.output(2)}
    assert SUPERSEDED in out.graph["Square"].meta
    feeds = {"grad": rand(4, 3), "lr": np.float32(0.01)}
    before, after = fx.compare(gd, out, "next_param", feeds, INIT)
    np.testing.assert_array_equal(after, before)


def test_operands_in_the_other_order_still_match(fx, adam) -> None:
    assert fx.fuse(fx.graph_def(lambda: adam(swapped=True))).stats[RULE] == 1


def test_another_reader_of_the_update_blocks_it(fx, adam) -> None:
    assert fx.fuse(fx.graph_def(lambda: adam(extra=True))).stats[RULE] == 0


def test_a_host_node_blocks_it(fx, adam) -> None:
    assert fx.fuse(fx.graph_def(adam), host={"Sqrt"}).stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "AdamApplyOneRuleCond1"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, adam, key) -> None:
    out = fx.fuse(fx.graph_def(adam), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == ["next_param"]
