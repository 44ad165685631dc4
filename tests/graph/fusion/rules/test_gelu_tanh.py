"""gelu_tanh: BERT's tanh GELU subgraph → the Gelu NPU op."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "gelu_tanh"


def gelu(*, dtype: str = "float32", cube: str = "pow", grouping: str = "bert",
         extra: bool = False, coefficient: float = 0.044715) -> None:
    import tensorflow as tf

    x = tf.compat.v1.placeholder(dtype, [3, 7], name="x")
    x3 = tf.pow(x, 3) if cube == "pow" else x * x * x
    t = tf.tanh(np.sqrt(2 / np.pi).astype(dtype) * (x + coefficient * x3), name="tanh")
    if extra:
        tf.identity(t, name="side")
    if grouping == "bert":  # google-research/bert modeling.gelu
        cdf = 0.5 * (1.0 + t)
        tf.multiply(x, cdf, name="out")
    else:
        tf.multiply(0.5 * x, 1.0 + t, name="out")


@pytest.mark.parametrize(("cube", "grouping"), [("pow", "bert"), ("mul", "bert"),
                                                ("pow", "half_x")])
def test_gelu_subgraph_becomes_one_gelu(fx, rand, cube, grouping) -> None:
    gd = fx.graph_def(lambda: gelu(cube=cube, grouping=grouping))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    ref = replacement_of(out.graph, TensorRef("out"))
    node = out.graph[ref.node]
    assert node.op == "Gelu" and [str(r) for r in node.inputs] == ["x"]
    assert SUPERSEDED in out.graph["tanh"].meta
    before, after = fx.compare(gd, out, "out", {"x": 3 * rand(3, 7)})
    np.testing.assert_allclose(after, before, rtol=2e-6, atol=1e-6)


def test_float16_constants_match_within_tolerance(fx) -> None:
    out = fx.fuse(fx.graph_def(lambda: gelu(dtype="float16")))
    assert out.stats[RULE] == 1


@pytest.mark.parametrize("kwargs", [{"extra": True}, {"coefficient": 0.05}],
                         ids=["tanh_read_elsewhere", "wrong_constant"])
def test_near_misses_do_not_fire(fx, kwargs) -> None:
    assert fx.fuse(fx.graph_def(lambda: gelu(**kwargs))).stats[RULE] == 0


def test_a_host_node_blocks_it(fx) -> None:
    assert fx.fuse(fx.graph_def(gelu), host={"tanh"}).stats[RULE] == 0


def test_in_a_training_graph_the_gradients_block_it(fx) -> None:
    import tensorflow as tf

    def train() -> None:
        gelu()
        g = tf.compat.v1.get_default_graph()
        tf.gradients(g.get_tensor_by_name("out:0"), [g.get_tensor_by_name("x:0")])

    assert fx.fuse(fx.graph_def(train)).stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "GeluFusionPass"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(gelu), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == ["out"]


def test_sqrt_two_over_pi_is_the_constant_matched() -> None:
    from tf2npu.graph.fusion.rules.gelu_tanh import PATTERNS

    scaled = PATTERNS[0].inputs[1].inputs[1].inputs[1].inputs[0]  # type: ignore[union-attr]
    assert scaled.inputs[0].value == pytest.approx(math.sqrt(2 / math.pi))  # type: ignore[union-attr]
