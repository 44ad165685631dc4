"""A BERT-style transformer training graph built with TensorFlow's v1 API, for tests and benchmarks.

The model follows google-research/bert's ``modeling.py`` in miniature (our own code): token
strings are mapped to ids by a lookup table and cleaned by a ``py_func`` in the input path,
then word + position embeddings, hand-written layer norm, ``layers`` encoder blocks of
multi-head self-attention and a tanh-gelu feed-forward, a classifier on the first token,
sparse softmax cross-entropy, and Adam. Dropout is optional (off for deterministic runs).

>>> built = build_bert_graph(layers=1, hidden=32, heads=2, seq=8)  # doctest: +SKIP
>>> built.loss, built.train_op  # doctest: +SKIP
('loss/Mean:0', 'train/Adam')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BertGraph", "build_bert_graph", "feed_for"]

VOCAB = ("[PAD]", "[UNK]", "[CLS]", *(f"w{i}" for i in range(61)))


@dataclass(frozen=True)
class BertGraph:
    """The built ``tf.Graph`` and the names a caller feeds and fetches."""

    graph: Any
    graph_def: Any
    tokens: str
    labels: str
    loss: str
    train_op: str
    init_ops: tuple[str, ...]
    batch: int
    seq: int


def build_bert_graph(
    *,
    layers: int = 2,
    hidden: int = 64,
    heads: int = 2,
    seq: int = 32,
    batch: int = 4,
    classes: int = 3,
    dropout: float = 0.0,
    seed: int = 1,
    resource_variables: bool = False,
    optimizer: Callable[[Any], Any] | None = None,
) -> BertGraph:
    """Build the graph (TensorFlow required); sizes default to the 'tiny' configuration.

    Variables are TF 1.15's default reference variables (``VariableV2``) unless
    ``resource_variables``. ``optimizer`` is called with ``tensorflow.compat.v1`` inside the
    graph and returns the ``tf.train.Optimizer`` that minimizes the loss (e.g. an
    ``NPUDistributedOptimizer`` around SGD); by default ``AdamOptimizer(1e-3)``, whose train op
    is ``train/Adam``.
    """
    import tensorflow.compat.v1 as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        tokens = tf.placeholder(tf.string, [batch, seq], name="tokens")
        labels = tf.placeholder(tf.int32, [batch], name="labels")
        ids = _input_path(tf, tokens, batch, seq)
        with tf.variable_scope("bert", use_resource=resource_variables):
            x = _embeddings(tf, ids, hidden, seq)
            for i in range(layers):
                with tf.variable_scope(f"layer_{i}"):
                    x = _encoder_block(tf, x, hidden, heads, seq, dropout)
            with tf.variable_scope("classifier"):
                first = tf.squeeze(x[:, 0:1, :], axis=1)
                logits = _dense(tf, first, classes, "logits")
        with tf.name_scope("loss"):
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits
            )
            loss = tf.reduce_mean(per_example)
        with tf.name_scope("train"):
            with tf.variable_scope("", use_resource=resource_variables):
                step = tf.train.get_or_create_global_step()
            if optimizer is None:
                train_op = tf.train.AdamOptimizer(1e-3).minimize(loss, step, name="Adam")
            else:
                train_op = optimizer(tf).minimize(loss, step)
        init = tf.global_variables_initializer()
        tables = tf.tables_initializer()
    return BertGraph(
        graph=graph,
        graph_def=graph.as_graph_def(),
        tokens=tokens.name,
        labels=labels.name,
        loss=loss.name,
        train_op=train_op.name,
        init_ops=(init.name, tables.name),
        batch=batch,
        seq=seq,
    )


def feed_for(built: BertGraph, seed: int = 0) -> dict[str, np.ndarray[Any, Any]]:
    """A deterministic synthetic batch for ``built`` (token strings and labels)."""
    rng = np.random.default_rng(seed)
    words = np.array([w.encode() for w in VOCAB[2:]], dtype=object)
    tokens = rng.choice(words, size=(built.batch, built.seq))
    tokens[:, 0] = b"[CLS]"
    labels = rng.integers(0, 3, size=built.batch).astype(np.int32)
    return {built.tokens: tokens, built.labels: labels}


def _input_path(tf: Any, tokens: Any, batch: int, seq: int) -> Any:
    """String tokens -> ids through a lookup table, then a host-side py_func clean-up."""
    with tf.name_scope("input"):
        init = tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(VOCAB)), tf.range(len(VOCAB), dtype=tf.int64)
        )
        table = tf.lookup.StaticHashTable(init, default_value=1, name="vocab")
        ids = table.lookup(tokens)

        def clip(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
            return np.clip(values, 0, len(VOCAB) - 1).astype(np.int32)

        ids = tf.py_func(clip, [ids], tf.int32, stateful=False, name="clip_ids")
        return tf.reshape(ids, [batch, seq])


def _embeddings(tf: Any, ids: Any, hidden: int, seq: int) -> Any:
    with tf.variable_scope("embeddings"):
        words = tf.get_variable("word", [len(VOCAB), hidden], initializer=_init(tf))
        positions = tf.get_variable("position", [seq, hidden], initializer=_init(tf))
        x = tf.gather(words, ids) + tf.expand_dims(positions, 0)
        return _layer_norm(tf, x, hidden)


def _encoder_block(tf: Any, x: Any, hidden: int, heads: int, seq: int, dropout: float) -> Any:
    flat = tf.reshape(x, [-1, hidden])
    with tf.variable_scope("attention"):
        attention = _self_attention(tf, flat, hidden, heads, seq, dropout)
        out = _dense(tf, attention, hidden, "output")
        flat = _layer_norm(tf, flat + _dropout(tf, out, dropout), hidden)
    with tf.variable_scope("ffn"):
        inner = _gelu(tf, _dense(tf, flat, 4 * hidden, "intermediate"))
        out = _dense(tf, inner, hidden, "output")
        flat = _layer_norm(tf, flat + _dropout(tf, out, dropout), hidden)
    return tf.reshape(flat, [-1, seq, hidden])


def _self_attention(tf: Any, flat: Any, hidden: int, heads: int, seq: int, rate: float) -> Any:
    size = hidden // heads

    def split(t: Any) -> Any:
        return tf.transpose(tf.reshape(t, [-1, seq, heads, size]), [0, 2, 1, 3])

    q = split(_dense(tf, flat, hidden, "query"))
    k = split(_dense(tf, flat, hidden, "key"))
    v = split(_dense(tf, flat, hidden, "value"))
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / float(np.sqrt(size)))
    probs = _dropout(tf, tf.nn.softmax(scores), rate)
    context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
    return tf.reshape(context, [-1, hidden])


def _dense(tf: Any, x: Any, units: int, name: str) -> Any:
    with tf.variable_scope(name):
        width = int(x.shape[-1])
        kernel = tf.get_variable("kernel", [width, units], initializer=_init(tf))
        bias = tf.get_variable("bias", [units], initializer=tf.zeros_initializer())
        return tf.nn.bias_add(tf.matmul(x, kernel), bias)


def _gelu(tf: Any, x: Any) -> Any:
    """The tanh approximation, written as in BERT's ``modeling.gelu``."""
    cdf = 0.5 * (1.0 + tf.tanh(float(np.sqrt(2 / np.pi)) * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


def _layer_norm(tf: Any, x: Any, hidden: int) -> Any:
    with tf.variable_scope(None, default_name="LayerNorm"):
        gamma = tf.get_variable("gamma", [hidden], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [hidden], initializer=tf.zeros_initializer())
        mean, variance = tf.nn.moments(x, axes=[-1], keep_dims=True)
        return (x - mean) * tf.rsqrt(variance + 1e-12) * gamma + beta


def _dropout(tf: Any, x: Any, rate: float) -> Any:
    if rate == 0.0:
        return x
    return tf.nn.dropout(x, rate=rate)


def _init(tf: Any) -> Any:
    return tf.truncated_normal_initializer(stddev=0.02)
