"""The BERT-style graph builder trains under stock TensorFlow and has the ops tests rely on."""

from __future__ import annotations

import collections

import numpy as np
import pytest

pytestmark = pytest.mark.tf


@pytest.mark.slow
def test_the_tiny_bert_graph_trains_and_has_the_input_path_host_ops() -> None:
    import tensorflow.compat.v1 as tf

    from tf2npu.testing.bert_graph import build_bert_graph, feed_for

    built = build_bert_graph(layers=1, hidden=32, seq=8)
    ops = collections.Counter(n.op for n in built.graph_def.node)
    assert ops["PyFuncStateless"] == 1
    assert ops["HashTableV2"] == ops["LookupTableImportV2"] == ops["LookupTableFindV2"] == 1
    assert ops["VariableV2"] > 0 and ops["VarHandleOp"] == 0
    assert ops["BatchMatMulV2"] == 6 and ops["Softmax"] == 1 and ops["Tanh"] == 1
    with tf.Session(graph=built.graph) as sess:
        sess.run(list(built.init_ops))
        feed = feed_for(built)
        losses = [sess.run([built.loss, built.train_op], feed)[0] for _ in range(20)]
    assert np.isfinite(losses).all()
    assert losses[-1] < losses[0]


def test_feed_is_deterministic_for_a_seed() -> None:
    from tf2npu.testing.bert_graph import build_bert_graph, feed_for

    built = build_bert_graph(layers=1, hidden=16, seq=4, batch=2)
    a, b = feed_for(built, seed=3), feed_for(built, seed=3)
    assert all((a[k] == b[k]).all() for k in a)
    assert a[built.tokens].shape == (2, 4) and (a[built.tokens][:, 0] == b"[CLS]").all()


@pytest.mark.slow
def test_the_optimizer_is_the_one_given() -> None:
    import tensorflow.compat.v1 as tf

    from tf2npu.testing.bert_graph import build_bert_graph, feed_for

    built = build_bert_graph(
        layers=1,
        hidden=16,
        seq=4,
        batch=2,
        optimizer=lambda v1: v1.train.MomentumOptimizer(0.1, 0.9),
    )
    ops = collections.Counter(n.op for n in built.graph_def.node)
    assert ops["ApplyMomentum"] > 0 and ops["ApplyAdam"] == 0
    assert built.train_op == "train/Momentum"
    default = build_bert_graph(layers=1, hidden=16, seq=4, batch=2)
    assert default.train_op == "train/Adam"
    with tf.Session(graph=built.graph) as sess:
        sess.run(list(built.init_ops))
        sess.run(built.train_op, feed_for(built))
