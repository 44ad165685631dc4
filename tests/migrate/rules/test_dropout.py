"""dropout: tf.nn.dropout -> npu_ops.dropout with keep_prob semantics."""

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

H = "from npu_bridge.npu_init import *\n"
TF = "import tensorflow as tf\n"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("tf.nn.dropout(x, rate=0.1)", "npu_ops.dropout(x, keep_prob=1 - 0.1)"),
        ("tf.nn.dropout(x, rate=r)", "npu_ops.dropout(x, keep_prob=1 - r)"),
        ("tf.nn.dropout(x, rate=1 - k)", "npu_ops.dropout(x, keep_prob=1 - (1 - k))"),
        ("tf.nn.dropout(x, rate=-r)", "npu_ops.dropout(x, keep_prob=1 - (-r))"),
        ("tf.nn.dropout(x, rate=self.p)", "npu_ops.dropout(x, keep_prob=1 - self.p)"),
        ("tf.nn.dropout(x, 1.0 - p)", "npu_ops.dropout(x, 1.0 - p)"),
        ("tf.nn.dropout(x, keep_prob=kp, seed=3, name='d')",
         "npu_ops.dropout(x, keep_prob=kp, seed=3, name='d')"),
        ("tf.nn.dropout(x, kp, None, 7)", "npu_ops.dropout(x, kp, None, 7)"),
    ],
)  # fmt: skip
def test_rewrites(call, expected):
    assert_migrates(TF + f"y = {call}\n", H + TF + f"y = {expected}\n")


def test_from_import_alias():
    assert_migrates(
        "from tensorflow.nn import dropout as drop\ny = drop(x, rate=0.5)\n",
        H
        + "from tensorflow.nn import dropout as drop\ny = npu_ops.dropout(x, keep_prob=1 - 0.5)\n",
    )


def test_noise_shape_is_kept_and_reported():
    source = TF + "y = tf.nn.dropout(x, 0.9, noise_shape=[1, 5])\n"
    migrated = migrate_text(source)
    assert migrated.output == source.encode()
    [info] = rule_findings(migrated, "dropout")
    assert info.severity is Severity.INFO and "noise_shape" in info.message


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("tf.nn.dropout(x, keep_prob=0.9, rate=0.1)", "both keep_prob and rate"),
        ("tf.nn.dropout(x)", "without keep_prob or rate"),
        ("tf.nn.dropout(*args)", "*args/**kwargs"),
    ],
)
def test_bad_calls_are_reported(call, message):
    source = TF + f"y = {call}\n"
    migrated = migrate_text(source)
    assert migrated.output == source.encode()
    assert message in rule_findings(migrated, "dropout")[0].message


def test_keras_dropout_layer_gets_the_convert_import():
    assert_migrates(
        TF + "layer = tf.keras.layers.Dropout(0.2)\n",
        "from npu_bridge.estimator.npu import npu_convert_dropout\n"
        + TF
        + "layer = tf.keras.layers.Dropout(0.2)\n",
    )


def test_users_own_dropout_is_untouched():
    source = "class nn:\n    @staticmethod\n    def dropout(x, rate):\n        return x\ny = nn.dropout(1, rate=0.5)\n"
    assert migrate_text(source).output == source.encode()
