"""Text classifier whose tf.data pipeline uses a lookup table and tf.py_func.

Each example is a fixed-length sequence of raw word tokens (mixed case, with
stray punctuation). Inside dataset.map() a numpy function cleans the tokens,
then a tf.lookup.StaticHashTable maps them to integer ids. A bag-of-embeddings
classifier is trained on top with a plain Session loop.
"""
import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf

VOCAB = ["<unk>", "good", "great", "fun", "love", "bad", "awful", "boring",
         "hate", "the", "movie", "was", "a", "plot", "and", "it"]
POSITIVE = {"good", "great", "fun", "love"}
NEGATIVE = {"bad", "awful", "boring", "hate"}
SEQ_LEN = 8


def make_corpus(num_examples, rng):
    """Random 'reviews'; label 1 if there are more positive than negative words."""
    tokens, labels = [], []
    for _ in range(num_examples):
        words = list(rng.choice(VOCAB[1:], size=SEQ_LEN))
        score = sum(w in POSITIVE for w in words) - sum(w in NEGATIVE for w in words)
        labels.append(1 if score > 0 else 0)
        # Make the raw text messy so that preprocessing has work to do.
        words = [w.upper() if rng.rand() < 0.3 else w for w in words]
        words = [w + rng.choice([",", ".", "!"]) if rng.rand() < 0.2 else w for w in words]
        tokens.append(words)
    return np.array(tokens), np.array(labels, dtype=np.int64)


def normalize_tokens(tokens):
    """numpy preprocessing run through tf.py_func: lower-case and strip punctuation."""
    # tf.py_func hands string tensors over as an object array of bytes.
    words = np.char.lower(tokens.astype(np.bytes_))
    return np.char.strip(words, b",.!")


def main(args):
    # Resource variables: with mixed compute (which the lookup table needs on the
    # NPU), the Saver reads the variables on the host, and the NPU refuses to hand
    # reference-typed variables from a device graph to a host op.
    tf.enable_resource_variables()
    np.random.seed(0)
    tf.set_random_seed(0)
    model_dir = args.model_dir or tempfile.mkdtemp(prefix="lookup_pyfunc_")
    rng = np.random.RandomState(0)
    tokens, labels = make_corpus(2000, rng)

    # Vocabulary table: string token -> int64 id; unknown words map to 0.
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            keys=tf.constant(VOCAB), values=tf.range(len(VOCAB), dtype=tf.int64)),
        default_value=0)

    def parse_fn(words, label):
        clean = tf.py_func(normalize_tokens, [words], tf.string, stateful=False)
        clean.set_shape([SEQ_LEN])  # py_func loses static shape information
        return table.lookup(clean), label

    dataset = tf.data.Dataset.from_tensor_slices((tokens, labels))
    dataset = dataset.shuffle(1000).repeat()
    dataset = dataset.map(parse_fn, num_parallel_calls=2)
    dataset = dataset.batch(args.batch_size)
    iterator = dataset.make_initializable_iterator()
    word_ids, label_batch = iterator.get_next()

    embeddings = tf.get_variable("embeddings", [len(VOCAB), 16],
                                 initializer=tf.random_uniform_initializer(-0.1, 0.1))
    embedded = tf.nn.embedding_lookup(embeddings, word_ids)  # [batch, SEQ_LEN, 16]
    pooled = tf.reduce_mean(embedded, axis=1)
    hidden = tf.layers.dense(pooled, 32, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=label_batch, logits=logits)
    train_op = tf.train.AdamOptimizer(0.01).minimize(
        loss, global_step=tf.train.get_or_create_global_step())

    saver = tf.train.Saver()
    log_every = max(1, args.steps // 5)
    with tf.Session(config=tf.ConfigProto()) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.tables_initializer())  # the table must be ready before the iterator runs
        sess.run(iterator.initializer)
        for step in range(args.steps):
            _, loss_value = sess.run([train_op, loss])
            if step % log_every == 0:
                print("step %d loss=%.5f" % (step, loss_value))
        saver.save(sess, os.path.join(model_dir, "model.ckpt"))
    print("final_loss=%f" % loss_value)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", dest="batch_size", type=int, default=64)
    parser.add_argument("--model-dir", dest="model_dir", default=None)
    main(parser.parse_args())
