"""Running the fusion pass on small TF1 graphs and comparing before/after in TF sessions."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from tf2npu.config.fusion_switch import FusionSwitch
from tf2npu.config.options import NpuOptions
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import PLACEMENT, Diagnostics, Placement, replacement_of
from tf2npu.graph.fusion import known_rules
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.lint import Signature
from tf2npu.graph.passes.fusion import FusionPass
from tf2npu.graph.passes.infra import PassContext


@dataclass
class Outcome:
    """The graph after the fusion pass, the pass's stats and the run's diagnostics."""

    graph: Graph
    stats: Mapping[str, int | float]
    diagnostics: Diagnostics


def place(graph: Graph, host: Collection[str] = ()) -> Graph:
    """Every node on the device except ``host`` (the placement pass is not under test here)."""
    for g in graph.walk():
        for node in g:
            node.meta[PLACEMENT] = Placement(device=node.name not in host)
    return graph


class Harness:
    """Build → fuse → lint → execute, for the rule tests."""

    @staticmethod
    def switch_off(key: str, category: str = "GraphFusion") -> str:
        """A fusion_switch_file text turning rule ``key`` (name or alias) off."""
        return f'{{"Switch": {{"{category}": {{"{key}": "off"}}}}}}'

    @staticmethod
    def graph_def(build: Callable[[], None], seed: int = 7) -> Any:
        import tensorflow as tf

        graph = tf.Graph()
        with graph.as_default():
            tf.compat.v1.set_random_seed(seed)
            build()
        return graph.as_graph_def()

    @staticmethod
    def fuse(graph_def: Any, *, switch: str | None = None, host: Collection[str] = ()) -> Outcome:
        graph = place(Graph.from_graph_def(graph_def), host)
        baseline = Signature.of(graph)
        rules = known_rules()
        fusion = FusionSwitch.all_on(rules) if switch is None else FusionSwitch.parse(switch, rules)
        cfg = EngineConfig.build(NpuOptions.from_values({}))
        cfg.fusion = fusion
        result = FusionPass().run(graph, PassContext(config=cfg))
        graph.lint(baseline)
        return Outcome(graph, result.stats, cfg.diagnostics)

    @staticmethod
    def run(
        graph_def: Any, fetch: str, feeds: Mapping[str, np.ndarray], init: Sequence[str] = ()
    ) -> np.ndarray:
        """``fetch`` in a fresh session, after running the ops ``init`` (variable initialisers)."""
        import tensorflow as tf

        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as session:
            if init:
                session.run(list(init))
            return np.asarray(session.run(fetch, {f"{k}:0": v for k, v in feeds.items()}))

    def compare(
        self,
        graph_def: Any,
        out: Outcome,
        root: str,
        feeds: Mapping[str, np.ndarray],
        init: Sequence[str] = (),
    ) -> tuple[np.ndarray, np.ndarray]:
        """The root's value before fusion and its replacement's value after."""
        from tf2npu.graph.npu_ops import materialize

        before = self.run(graph_def, f"{root}:0", feeds, init)
        fused = replacement_of(out.graph, TensorRef(root))
        assert fused.node != root, f"{root} was not fused"
        materialize(out.graph)
        after = self.run(out.graph.to_graph_def(), f"{fused.node}:{fused.index}", feeds, init)
        return before, after

    def train(
        self,
        build: Callable[[], Any],
        *,
        optimizer: str = "adam",
        steps: int = 3,
        resource: bool = False,
        seed: int = 3,
    ) -> Training:
        """Train the loss ``build`` returns (it makes its own variables, feeding nothing) with
        and without the fusion pass; the losses of every step and the variables at the end."""
        import tensorflow as tf

        tf1 = tf.compat.v1

        def graph() -> None:
            tf1.get_variable_scope().set_use_resource(resource)
            loss = tf.identity(build(), name="loss")
            if optimizer == "adam":  # BERT's epsilon: noise-level gradients stay small steps
                opt = tf1.train.AdamOptimizer(1e-2, epsilon=1e-6)
            else:
                opt = tf1.train.GradientDescentOptimizer(0.1)
            opt.minimize(loss, name="train")
            tf.group(*[v.initializer for v in tf1.global_variables()], name="init")
            for v in tf1.trainable_variables():
                tf.identity(v.read_value() if resource else v, name=f"final/{v.op.name}")

        gd = self.graph_def(graph, seed)
        out = self.fuse(gd)
        from tf2npu.graph.npu_ops import materialize

        runnable = Graph.from_graph_def(out.graph.to_graph_def())  # out.graph keeps its NPU ops
        materialize(runnable)
        before = _train(gd, steps)
        after = _train(runnable.to_graph_def(), steps)
        return Training(out, before[0], after[0], before[1], after[1])


@dataclass
class Training:
    """What :meth:`Harness.train` measured: the fused graph, losses and final variables."""

    outcome: Outcome
    losses: list[float]
    fused_losses: list[float]
    variables: dict[str, np.ndarray]
    fused_variables: dict[str, np.ndarray]

    def assert_same(self, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        np.testing.assert_allclose(self.fused_losses, self.losses, rtol=rtol)
        assert self.fused_variables.keys() == self.variables.keys()
        for name, value in self.variables.items():
            np.testing.assert_allclose(
                self.fused_variables[name], value, rtol=rtol, atol=atol, err_msg=name
            )


def _train(graph_def: Any, steps: int) -> tuple[list[float], dict[str, np.ndarray]]:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    finals = [op.name for op in graph.get_operations() if op.name.startswith("final/")]
    with tf.compat.v1.Session(graph=graph) as session:
        session.run("init")
        losses = []
        for _ in range(steps):
            losses.append(float(session.run("loss:0")))
            session.run("train")
        losses.append(float(session.run("loss:0")))
        values = session.run([f"{name}:0" for name in finals])
    return losses, dict(zip(finals, values, strict=True))


#: Initialisers of the variables :func:`adam_update` creates.
ADAM_INIT = ("param/Assign", "m/Assign", "v/Assign")


def adam_update(*, decay: bool = False, swapped: bool = False, extra: bool = False) -> None:
    """One variable's update as google-research/bert's AdamWeightDecayOptimizer writes it."""
    import tensorflow as tf

    rng = np.random.default_rng(8)

    def var(name: str, low: float = -1.0) -> Any:
        init = rng.uniform(low, 1.0, (4, 3)).astype(np.float32)
        return tf.compat.v1.Variable(init, name=name, use_resource=False)

    param, m, v = var("param"), var("m"), var("v", 0.0)
    grad = tf.compat.v1.placeholder(tf.float32, [4, 3], name="grad")
    lr = tf.compat.v1.placeholder(tf.float32, [], name="lr")
    beta_1, beta_2, epsilon, wd = 0.9, 0.999, 1e-6, 0.01
    if swapped:
        next_m = tf.multiply(grad, 1.0 - beta_1) + tf.multiply(m, beta_1)
    else:
        next_m = tf.multiply(beta_1, m) + tf.multiply(1.0 - beta_1, grad)
    next_v = tf.multiply(beta_2, v) + tf.multiply(1.0 - beta_2, tf.square(grad))
    update = next_m / (tf.sqrt(next_v) + epsilon)
    if decay:
        update += wd * param
    if extra:
        tf.identity(update, name="side")
    next_param = tf.subtract(param, lr * update, name="next_param")
    tf.group(param.assign(next_param), m.assign(next_m), v.assign(next_v), name="train")


@pytest.fixture
def adam() -> Callable[..., None]:
    """The BERT Adam update builder (``decay``, ``swapped`` operands, ``extra`` reader)."""
    return adam_update


@pytest.fixture
def fx() -> Harness:
    pytest.importorskip("tensorflow")
    return Harness()


def rng_array(*shape: int, seed: int = 0, dtype: Any = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.fixture
def rand() -> Callable[..., np.ndarray]:
    return rng_array
