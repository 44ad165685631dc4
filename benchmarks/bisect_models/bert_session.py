"""A BERT-style encoder trained with tf.Session: the reproducible model of bisect_accuracy.py.

tf2npu's own BERT-style graph (``tf2npu.testing.bert_graph``: token lookup table and py_func
input path, word + position embeddings, hand-written layer norm, 2 encoder blocks of
multi-head self-attention and a tanh-GELU feed-forward, a classifier on the first token,
sparse softmax cross-entropy, Adam), trained in a Session whose config carries the
NpuOptimizer (as a migrated script's does), on fixed synthetic batches, then evaluated once
in a forward-only copy of the graph given the trained values. No
Estimator, no input threads: two runs of one configuration give the same numbers bit for bit.

Usage: tf2npu run bert_session.py [--steps N]
"""

import argparse

import numpy as np
import tensorflow as tf

from npu_bridge.npu_init import npu_config_proto
from tf2npu.testing.bert_graph import build_bert_graph, feed_for


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    built = build_bert_graph(layers=2, hidden=64, heads=2, seq=16, batch=8)
    with tf.Session(graph=built.graph, config=npu_config_proto()) as sess:
        sess.run(list(built.init_ops))
        for step in range(args.steps):
            loss, _ = sess.run([built.loss, built.train_op], feed_for(built, seed=step))
            print(f"step {step} loss {loss:.6f}")
        variables = built.graph.get_collection("trainable_variables")
        trained = {v.op.name: sess.run(v) for v in variables}
    evaluate(trained)


def evaluate(trained):
    """The loss of a held-out batch in a forward-only graph with the trained values.

    The graph is the training graph cut down to what the loss needs (no gradients read the
    forward ops), as an exported inference graph is: the forward-only fusions (layer norm,
    GELU, softmax cross-entropy) can fire there.
    """
    built = build_bert_graph(layers=2, hidden=64, heads=2, seq=16, batch=8)
    keep = [built.loss.split(":")[0], *built.init_ops[1:]]  # the loss and the table init
    forward = tf.graph_util.extract_sub_graph(built.graph_def, keep)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)  # nothing here draws, but deterministic=1 asks for a seed
        tf.import_graph_def(forward, name="")
        loads = [
            tf.assign(graph.get_tensor_by_name(f"{name}:0"), value)
            for name, value in trained.items()
        ]
    with tf.Session(graph=graph, config=npu_config_proto()) as sess:
        sess.run([*built.init_ops[1:], *loads])
        loss = sess.run(built.loss, feed_for(built, seed=1000))
    print(f"eval loss {np.float32(loss):.6f}")


if __name__ == "__main__":
    main()
