"""estimator: RunConfig / Estimator / EstimatorSpec / canned estimators."""

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

H = "from npu_bridge.npu_init import *\n"
TF = "import tensorflow as tf\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "c = tf.estimator.RunConfig('/m', 1, 10)\n",
            "c = NPURunConfig(model_dir='/m', tf_random_seed=1, save_summary_steps=10)\n",
        ),
        (
            "e = tf.estimator.Estimator(model_fn)\n",
            "e = NPUEstimator(model_fn, config=NPURunConfig())\n",
        ),
        (
            "e = tf.estimator.Estimator(model_fn, '/m', None, {}, ws)\n",
            "e = NPUEstimator(model_fn, '/m', NPURunConfig(), {}, warm_start_from=ws)\n",
        ),
        (
            "e = tf.estimator.Estimator(model_fn, config=tf.estimator.RunConfig().replace(x=1))\n",
            "e = NPUEstimator(model_fn, config=NPURunConfig().replace(x=1))\n",
        ),
        (
            "spec = tf.estimator.EstimatorSpec(mode, loss=l, train_op=op)\n",
            "spec = NPUEstimatorSpec(mode, loss=l, train_op=op)\n",
        ),
        (
            "m = tf.estimator.LinearClassifier(cols)\n",
            "m = tf.estimator.LinearClassifier(cols, config=npu_run_config_init())\n",
        ),
    ],
)
def test_rewrites(before, after):
    assert_migrates(TF + before, H + TF + after)


def test_config_from_elsewhere_keeps_estimator_and_inits_its_config():
    assert_migrates(
        TF + "def build(cfg):\n    return tf.estimator.Estimator(model_fn, config=cfg)\n",
        H + TF + "def build(cfg):\n"
        "    return tf.estimator.Estimator(model_fn, config=npu_run_config_init(run_config=cfg))\n",
    )


def test_runconfig_arguments_npurunconfig_lacks_are_removed_and_reported():
    migrated = assert_migrates(
        TF + "c = tf.estimator.RunConfig(\n    model_dir=d,\n    device_fn=fn,\n)\n",
        H + TF + "c = NPURunConfig(\n    model_dir=d,\n)\n",
    )
    messages = [f.message for f in rule_findings(migrated, "estimator")]
    assert "RunConfig argument device_fn= removed: NPURunConfig does not take it" in messages


def test_default_checkpointing_change_is_reported():
    migrated = migrate_text(TF + "c = tf.estimator.RunConfig(model_dir=d)\n")
    [info] = rule_findings(migrated, "estimator")
    assert info.severity is Severity.INFO and "every 100 steps" in info.message


def test_options_become_npurunconfig_arguments():
    options = MigrateOptions(precision_mode="allow_mix_precision", mix_compile=True)
    assert_migrates(
        TF + "c = tf.estimator.RunConfig(model_dir=d)\ne = tf.estimator.Estimator(f)\n",
        H + TF + "c = NPURunConfig(model_dir=d, precision_mode='allow_mix_precision', "
        "mix_compile_mode=True)\n"
        "e = NPUEstimator(f, config=NPURunConfig(precision_mode='allow_mix_precision', "
        "mix_compile_mode=True))\n",
        options,
    )


def test_subclass_is_reported():
    migrated = migrate_text(TF + "class E(tf.estimator.Estimator):\n    pass\n")
    [warning] = rule_findings(migrated, "estimator")
    assert warning.severity is Severity.WARNING and warning.line == 2


def test_users_own_estimator_class_is_untouched():
    source = "class Estimator:\n    pass\ne = Estimator()\n"
    assert migrate_text(source).output == source.encode()
