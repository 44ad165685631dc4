"""dataset_batch: drop_remainder=True on provable training datasets only."""

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

TF = "import tensorflow as tf\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # an unbounded stream: dropping a remainder loses nothing
        ("d = tf.data.Dataset.range(9).repeat().batch(2)\n",
         "d = tf.data.Dataset.range(9).repeat().batch(2, drop_remainder=True)\n"),
        ("d = tf.data.TextLineDataset(f)\nd = d.repeat()\nd = d.map(g)\nd = d.padded_batch(4, s)\n",
         "d = tf.data.TextLineDataset(f)\nd = d.repeat()\nd = d.map(g)\nd = d.padded_batch(4, s, drop_remainder=True)\n"),
        ("def make():\n    return tf.data.TFRecordDataset(f)\nd = make().repeat(None).shuffle(9).batch(8)\n",
         "def make():\n    return tf.data.TFRecordDataset(f)\nd = make().repeat(None).shuffle(9).batch(8, drop_remainder=True)\n"),
        ("d = tf.data.TFRecordDataset(f).repeat()\nd = d.apply(tf.contrib.data.map_and_batch(fn, 32))\n",
         "d = tf.data.TFRecordDataset(f).repeat()\nd = d.apply(tf.contrib.data.map_and_batch(fn, 32, drop_remainder=True))\n"),
        ("d = tf.data.TFRecordDataset(f).apply(tf.data.experimental.shuffle_and_repeat(100))\nd = d.batch(4)\n",
         "d = tf.data.TFRecordDataset(f).apply(tf.data.experimental.shuffle_and_repeat(100))\nd = d.batch(4, drop_remainder=True)\n"),
        ("d = (tf.data.Dataset.range(9).repeat()\n     .batch(\n         2,\n     ))\n",
         "d = (tf.data.Dataset.range(9).repeat()\n     .batch(\n         2,\n         drop_remainder=True,\n     ))\n"),
        # the input_fn of estimator.train (and of nothing else): training input
        ("def train_input_fn():\n    return tf.data.TFRecordDataset(f).batch(32)\n"
         "est.train(input_fn=train_input_fn, steps=10)\n",
         "def train_input_fn():\n    return tf.data.TFRecordDataset(f).batch(32, drop_remainder=True)\n"
         "est.train(input_fn=train_input_fn, steps=10)\n"),
        ("def builder(files):\n    def input_fn(params):\n        return tf.data.TFRecordDataset(files).batch(params['batch_size'])\n    return input_fn\n"
         "spec = tf.estimator.TrainSpec(input_fn=builder(train_files))\n",
         "def builder(files):\n    def input_fn(params):\n        return tf.data.TFRecordDataset(files).batch(params['batch_size'], drop_remainder=True)\n    return input_fn\n"
         "spec = tf.estimator.TrainSpec(input_fn=builder(train_files))\n"),
    ],
)  # fmt: skip
def test_rewrites_training_input(before, after):
    migrated = assert_migrates(TF + before, TF + after)
    [info] = rule_findings(migrated, "dataset_batch")
    assert info.severity is Severity.INFO and "last partial batch" in info.message


@pytest.mark.parametrize(
    "source",
    [
        # issue 20: a predict input_fn with take(10): drop_remainder=True would predict nothing
        "def predict_input_fn():\n    return tf.data.TFRecordDataset(f).take(10).batch(32)\n"
        "est.predict(input_fn=predict_input_fn)\n",
        # bounded: take() after the repeat, repeat(count)
        "d = tf.data.Dataset.range(9).repeat().take(5).batch(2)\n",
        "d = tf.data.Dataset.range(9).repeat(3).batch(2)\n",
        # the repeat only happens on one branch
        "d = tf.data.TFRecordDataset(f)\nif training:\n    d = d.repeat()\nd = d.batch(2)\n",
        # one input_fn for train and evaluate: not training input alone
        "def input_fn():\n    return tf.data.TFRecordDataset(f).batch(8)\n"
        "est.train(input_fn=input_fn)\nest.evaluate(input_fn=input_fn)\n",
        # nothing says what it is
        "d = tf.data.Dataset.range(9).batch(2)\n",
        "d = tf.data.experimental.map_and_batch(map_func=fn, batch_size=32)\n",
    ],
)  # fmt: skip
def test_other_batches_are_kept_and_the_risk_is_named(source):
    migrated = migrate_text(TF + source)
    assert migrated.output == (TF + source).encode()
    [warning] = rule_findings(migrated, "dataset_batch")
    assert warning.severity is Severity.WARNING
    assert "not proven to be training input" in warning.message
    assert "becomes empty" in warning.fix and "last partial batch" in warning.fix


@pytest.mark.parametrize(
    "source",
    [
        TF + "d = tf.data.Dataset.range(9).batch(2, True)\n",
        TF + "d = tf.data.Dataset.range(9).batch(2, drop_remainder=True)\n",
        TF + "def f(ds):\n    return ds.batch(2)\n",
        TF + "x = tf.train.batch([t], 32)\n",
        "class B:\n    def batch(self, n):\n        return self\nB().batch(2)\n",
        TF + "d = tf.data.Dataset.range(3)\nd = something_else()\nd = d.batch(2)\n",
    ],
)
def test_left_alone_silently(source):
    migrated = migrate_text(source)
    assert migrated.output == source.encode()
    assert rule_findings(migrated, "dataset_batch") == []


def test_explicit_false_is_respected_and_reported():
    source = TF + "d = tf.data.Dataset.range(9).batch(2, drop_remainder=False)\n"
    migrated = migrate_text(source)
    assert migrated.output == source.encode()
    [warning] = rule_findings(migrated, "dataset_batch")
    assert warning.severity is Severity.WARNING
