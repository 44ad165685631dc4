"""A small Transformer encoder written the way TF 1.x research code (BERT, ALBERT) wrote it.

This is tf2npu's own test model, not third-party code. It exists to exercise, under
``tf2npu migrate`` and ``tf2npu run``, the TF 1.15 API usage that such models share:
``tf.variable_scope``/``tf.get_variable``, embeddings by ``tf.gather`` or ``tf.one_hot``,
``tf.contrib.layers.layer_norm`` over the last axis, ``tf.layers.dense`` with a truncated-normal
initializer, a hand-written tanh GELU, ``tf.nn.dropout`` with a positional keep probability and
masked dot-product attention built from ``tf.matmul(..., transpose_b=True)``.
"""

import collections
import copy
import json
import math
import re

import numpy as np
import tensorflow as tf


class EncoderConfig:
    """Hyperparameters of the encoder."""

    def __init__(self, vocab_size, width=64, depth=2, heads=2, ffn_width=128,
                 act="gelu", hidden_drop=0.1, attention_drop=0.1, max_positions=64,
                 segment_vocab=2, init_stddev=0.02):
        self.vocab_size = vocab_size
        self.width = width
        self.depth = depth
        self.heads = heads
        self.ffn_width = ffn_width
        self.act = act
        self.hidden_drop = hidden_drop
        self.attention_drop = attention_drop
        self.max_positions = max_positions
        self.segment_vocab = segment_vocab
        self.init_stddev = init_stddev

    @classmethod
    def from_json_file(cls, path):
        with tf.gfile.GFile(path, "r") as reader:
            values = json.loads(reader.read())
        config = cls(vocab_size=None)
        for key, value in values.items():
            setattr(config, key, value)
        return config


def gelu_tanh(x):
    """GELU by its tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))
    return 0.5 * x * (1.0 + tf.tanh(inner))


def activation_by_name(name):
    return {"gelu": gelu_tanh, "relu": tf.nn.relu, "tanh": tf.tanh, "linear": None}[name]


def drop(x, drop_prob):
    """Dropout taking the probability to DROP; tf.nn.dropout below gets the keep probability."""
    if not drop_prob:
        return x
    return tf.nn.dropout(x, 1.0 - drop_prob)


def norm(x, scope=None):
    return tf.contrib.layers.layer_norm(
        inputs=x, begin_norm_axis=-1, begin_params_axis=-1, scope=scope)


def norm_and_drop(x, drop_prob, scope=None):
    return drop(norm(x, scope), drop_prob)


def init_for(stddev):
    return tf.truncated_normal_initializer(stddev=stddev)


def static_or_dynamic_shape(tensor, rank=None):
    """Each dimension as a Python int when known statically, else as a scalar tensor."""
    if rank is not None and tensor.shape.ndims != rank:
        raise ValueError(
            f"{tensor.name} in scope {tf.get_variable_scope().name!r} has rank "
            f"{tensor.shape.ndims}, expected {rank}")
    static = tensor.shape.as_list()
    dynamic = tf.shape(tensor)
    return [dim if dim is not None else dynamic[i] for i, dim in enumerate(static)]


def token_embeddings(ids, vocab_size, width, stddev, one_hot, table_name="token_table"):
    table = tf.get_variable(table_name, [vocab_size, width], initializer=init_for(stddev))
    batch, seq = static_or_dynamic_shape(ids, rank=2)
    # [batch, seq] -> [batch, seq, 1]; the list-valued axis is how TF 1 code often spelled it.
    flat = tf.reshape(tf.expand_dims(ids, axis=[-1]), [-1])
    if one_hot:
        rows = tf.matmul(tf.one_hot(flat, depth=vocab_size), table)
    else:
        rows = tf.gather(table, flat)
    return tf.reshape(rows, [batch, seq, width]), table


def add_segments_and_positions(x, segment_ids, config):
    batch, seq, width = static_or_dynamic_shape(x)
    segment_table = tf.get_variable(
        "segment_table", [config.segment_vocab, width], initializer=init_for(config.init_stddev))
    one_hot_segments = tf.one_hot(tf.reshape(segment_ids, [-1]), depth=config.segment_vocab)
    x += tf.reshape(tf.matmul(one_hot_segments, segment_table), [batch, seq, width])
    fits = tf.assert_less_equal(seq, config.max_positions)
    with tf.control_dependencies([fits]):
        position_table = tf.get_variable(
            "position_table", [config.max_positions, width],
            initializer=init_for(config.init_stddev))
        x += tf.expand_dims(tf.slice(position_table, [0, 0], [seq, -1]), 0)
    return norm_and_drop(x, config.hidden_drop)


def pairwise_mask(from_tensor, to_mask):
    """[batch, from_seq, to_seq] float mask: 1 where the key position is real input."""
    batch, from_seq = static_or_dynamic_shape(from_tensor)[:2]
    to_seq = static_or_dynamic_shape(to_mask)[1]
    keys = tf.cast(tf.reshape(to_mask, [batch, 1, to_seq]), tf.float32)
    return tf.ones([batch, from_seq, 1], tf.float32) * keys


def split_heads(x, batch, seq, heads, head_width):
    return tf.transpose(tf.reshape(x, [batch, seq, heads, head_width]), [0, 2, 1, 3])


def self_attention(x2d, mask, batch, seq, config):
    head_width = config.width // config.heads
    project = lambda name: tf.layers.dense(  # noqa: E731
        x2d, config.heads * head_width, name=name, kernel_initializer=init_for(config.init_stddev))
    q = split_heads(project("q"), batch, seq, config.heads, head_width)
    k = split_heads(project("k"), batch, seq, config.heads, head_width)
    v = split_heads(project("v"), batch, seq, config.heads, head_width)
    scores = tf.multiply(tf.matmul(q, k, transpose_b=True), 1.0 / math.sqrt(float(head_width)))
    scores += (1.0 - tf.expand_dims(mask, axis=[1])) * -10000.0
    weights = drop(tf.nn.softmax(scores), config.attention_drop)
    context = tf.transpose(tf.matmul(weights, v), [0, 2, 1, 3])
    return tf.reshape(context, [batch * seq, config.heads * head_width])


def encoder_stack(x, mask, config):
    batch, seq, width = static_or_dynamic_shape(x)
    if width % config.heads:
        raise ValueError(f"width {width} is not a multiple of heads {config.heads}")
    h = tf.reshape(x, [-1, width])
    outputs = []
    for i in range(config.depth):
        with tf.variable_scope(f"block_{i}"):
            with tf.variable_scope("attention"):
                attended = self_attention(h, mask, batch, seq, config)
                attended = tf.layers.dense(attended, width, name="out",
                                           kernel_initializer=init_for(config.init_stddev))
                h = norm(drop(attended, config.hidden_drop) + h, "attention_norm")
            with tf.variable_scope("ffn"):
                inner = tf.layers.dense(h, config.ffn_width, name="up",
                                        activation=activation_by_name(config.act),
                                        kernel_initializer=init_for(config.init_stddev))
                out = tf.layers.dense(inner, width, name="down",
                                      kernel_initializer=init_for(config.init_stddev))
                h = norm(drop(out, config.hidden_drop) + h, "ffn_norm")
            outputs.append(tf.reshape(h, [batch, seq, width]))
    return outputs


class Encoder:
    """Embeddings, a stack of Transformer blocks and a tanh pooler over the first position."""

    def __init__(self, config, is_training, ids, mask=None, segments=None, one_hot=False,
                 scope=None):
        config = copy_for_mode(config, is_training)
        batch, seq = static_or_dynamic_shape(ids)
        if mask is None:
            mask = tf.ones([batch, seq], dtype=tf.int32)
        if segments is None:
            segments = tf.zeros([batch, seq], dtype=tf.int32)
        with tf.variable_scope(scope, default_name="encoder"):
            with tf.variable_scope("embed"):
                x, self.token_table = token_embeddings(
                    ids, config.vocab_size, config.width, config.init_stddev, one_hot)
                self.embedded = add_segments_and_positions(x, segments, config)
            with tf.variable_scope("blocks"):
                self.block_outputs = encoder_stack(
                    self.embedded, pairwise_mask(ids, mask), config)
            self.sequence = self.block_outputs[-1]
            with tf.variable_scope("pool"):
                first = tf.squeeze(self.sequence[:, 0:1, :], axis=1)
                self.pooled = tf.layers.dense(first, config.width, activation=tf.tanh,
                                              kernel_initializer=init_for(config.init_stddev))


def copy_for_mode(config, is_training):
    clone = copy.deepcopy(config)
    if not is_training:
        clone.hidden_drop = 0.0
        clone.attention_drop = 0.0
    return clone


def checkpoint_assignment(trainable, checkpoint):
    """Map checkpoint names to this graph's variables of the same name, for init_from_checkpoint.

    Returns (assignment map, set of matched names, with and without ":0").
    """
    by_name = collections.OrderedDict()
    for var in trainable:
        match = re.match(r"^(.*):\d+$", var.name)
        by_name[match.group(1) if match else var.name] = var
    assignment, matched = collections.OrderedDict(), set()
    for name, _ in tf.train.list_variables(checkpoint):
        if name in by_name:
            assignment[name] = name
            matched.update([name, name + ":0"])
    return assignment, matched


def random_ids(rng, shape, high):
    return np.asarray(rng.randint(0, high, size=shape), dtype=np.int64)
