"""The models of the multi-rank benchmarks (imported by them; not a benchmark itself).

Every model is built in its own ``tf.Graph`` for one rank of ``size``: its placeholders take
this rank's equal shard (``global_batch / size`` rows) of fixed synthetic global batches, its
loss is the mean over those rows (so the mean of the ranks' gradients is the gradient of the
global batch), and its train op comes from the ``optimizer`` factory the caller gives
(``optimizer(tf.compat.v1)`` is called inside the graph: an ``NPUDistributedOptimizer`` around a
``tf.compat.v1.train`` optimizer, or a benchmark's own wrapper). No dropout; fixed seeds: every
rank and every run builds the same initial values.

* ``small_mlp``: the distributed spike's MLP 32-64-64-10 (ReLU, tanh), 6 gradient tensors
  (6,922 parameters, 27 KB), global batch 64;
* ``big_mlp``: the same with hidden 1024 (1,093,642 parameters = 4.4 MB of gradients), global
  batch 256;
* ``bert``: ``tf2npu.testing.bert_graph`` (2 encoder blocks, hidden 64, 2 heads, sequence 16,
  token lookup table and ``py_func`` input path; 38 gradient tensors, 37 dense and the word
  embedding's an ``IndexedSlices``), global batch 8.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tf2npu.testing.bert_graph import build_bert_graph, feed_for

#: Global batch rows per model (divisible by 1, 2 and 4).
GLOBAL_BATCH = {"small_mlp": 64, "big_mlp": 256, "bert": 8}
MODELS = tuple(GLOBAL_BATCH)

#: The wrapped optimizers: name -> factory of the ``tensorflow.compat.v1`` module.
OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "sgd": lambda v1: v1.train.GradientDescentOptimizer(0.1),
    "momentum": lambda v1: v1.train.MomentumOptimizer(0.1, 0.9),
    "adam": lambda v1: v1.train.AdamOptimizer(1e-3),
}

_MLP_IN, _MLP_OUT = 32, 10


@dataclass(frozen=True)
class Model:
    """One rank's training graph and its shard of every global batch."""

    name: str
    graph: Any
    loss: Any
    train_op: Any
    init: list[Any]
    feeds: Callable[[int], dict[Any, Any]]
    """Step -> this rank's feed (global batch ``step``)."""


def build(name: str, optimizer: Callable[[Any], Any], rank: int, size: int) -> Model:
    """Model ``name`` for rank ``rank`` of ``size``, trained by ``optimizer(tf.compat.v1)``."""
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # py_func's deprecation notice, once per rank
    if name == "bert":
        return _bert(optimizer, rank, size)
    return _mlp(name, optimizer, rank, size, hidden=64 if name == "small_mlp" else 1024)


def _rows(name: str, rank: int, size: int) -> slice:
    per = GLOBAL_BATCH[name] // size
    return slice(rank * per, (rank + 1) * per)


def _mlp(name: str, optimizer: Callable[[Any], Any], rank: int, size: int, hidden: int) -> Model:
    import tensorflow.compat.v1 as tf

    batch, rows = GLOBAL_BATCH[name], _rows(name, rank, size)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [batch // size, _MLP_IN], name="x")
        y = tf.placeholder(tf.int64, [batch // size], name="y")
        h = tf.nn.relu(_layer(tf, x, hidden, "l1", seed=1))
        h = tf.nn.tanh(_layer(tf, h, hidden, "l2", seed=2))
        logits = _layer(tf, h, _MLP_OUT, "l3", seed=3)
        per_row = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        loss = tf.reduce_mean(per_row, name="loss")
        train_op = optimizer(tf).minimize(loss)
        init = [tf.global_variables_initializer()]

    def feeds(step: int) -> dict[Any, Any]:
        data = np.random.RandomState(1234 + step)
        inputs = data.randn(batch, _MLP_IN).astype(np.float32)
        labels = np.argmax(inputs.astype(np.float64) @ data.randn(_MLP_IN, _MLP_OUT), axis=-1)
        return {x: inputs[rows], y: labels[rows].astype(np.int64)}

    return Model(name, graph, loss, train_op, init, feeds)


def _layer(tf: Any, x: Any, units: int, name: str, seed: int) -> Any:
    with tf.variable_scope(name):
        kernel = tf.get_variable(
            "kernel", [int(x.shape[-1]), units], initializer=tf.glorot_uniform_initializer(seed)
        )
        bias = tf.get_variable("bias", [units], initializer=tf.zeros_initializer())
        return tf.matmul(x, kernel) + bias


def _bert(optimizer: Callable[[Any], Any], rank: int, size: int) -> Model:
    rows, batch = _rows("bert", rank, size), GLOBAL_BATCH["bert"]
    built = build_bert_graph(
        layers=2, hidden=64, heads=2, seq=16, batch=batch // size, optimizer=optimizer
    )
    whole = dataclasses.replace(built, batch=batch)  # the global batch's feed, sliced below
    graph = built.graph

    def feeds(step: int) -> dict[Any, Any]:
        return {name: value[rows] for name, value in feed_for(whole, seed=step).items()}

    return Model(
        "bert",
        graph,
        graph.get_tensor_by_name(built.loss),
        graph.get_operation_by_name(built.train_op),
        [graph.get_operation_by_name(op) for op in built.init_ops],
        feeds,
    )


def trainable(model: Model) -> list[Any]:
    """The model's trainable variables, in creation order."""
    return list(model.graph.get_collection("trainable_variables"))
