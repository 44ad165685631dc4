"""dataset_batch: drop_remainder=True on provable datasets only."""

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

TF = "import tensorflow as tf\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("d = tf.data.Dataset.range(9).batch(2)\n",
         "d = tf.data.Dataset.range(9).batch(2, drop_remainder=True)\n"),
        ("d = tf.data.TextLineDataset(f)\nd = d.map(g)\nd = d.padded_batch(4, s)\n",
         "d = tf.data.TextLineDataset(f)\nd = d.map(g)\nd = d.padded_batch(4, s, drop_remainder=True)\n"),
        ("def make():\n    return tf.data.TFRecordDataset(f)\nd = make().batch(8)\n",
         "def make():\n    return tf.data.TFRecordDataset(f)\nd = make().batch(8, drop_remainder=True)\n"),
        ("d = ds0.apply(tf.contrib.data.map_and_batch(fn, 32))\n",
         "d = ds0.apply(tf.contrib.data.map_and_batch(fn, 32, drop_remainder=True))\n"),
        ("d = tf.data.experimental.map_and_batch(map_func=fn, batch_size=32)\n",
         "d = tf.data.experimental.map_and_batch(map_func=fn, batch_size=32, drop_remainder=True)\n"),
        ("d = (tf.data.Dataset.range(9)\n     .batch(\n         2,\n     ))\n",
         "d = (tf.data.Dataset.range(9)\n     .batch(\n         2,\n         drop_remainder=True,\n     ))\n"),
    ],
)  # fmt: skip
def test_rewrites(before, after):
    migrated = assert_migrates(TF + before, TF + after)
    [info] = rule_findings(migrated, "dataset_batch")
    assert info.severity is Severity.INFO and "last partial batch" in info.message


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
def test_left_alone(source):
    assert migrate_text(source).output == source.encode()


def test_explicit_false_is_respected_and_reported():
    source = TF + "d = tf.data.Dataset.range(9).batch(2, drop_remainder=False)\n"
    migrated = migrate_text(source)
    assert migrated.output == source.encode()
    [warning] = rule_findings(migrated, "dataset_batch")
    assert warning.severity is Severity.WARNING
