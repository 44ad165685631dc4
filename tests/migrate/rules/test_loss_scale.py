"""loss_scale: TF loss scaling becomes NPULossScaleOptimizer; --loss-scale wraps optimizers."""

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import Distributed, LossScale, MigrateOptions
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

IMPORT = "from npu_bridge.npu_init import *\n"
TF = "import tensorflow as tf\n"
TF_DYNAMIC = (
    "ExponentialUpdateLossScaleManager(init_loss_scale=2**15, incr_every_n_steps=2000, "
    "decr_every_n_nan_or_inf=1, incr_ratio=2.0, decr_ratio=0.5)"
)
ASCEND_DYNAMIC = TF_DYNAMIC
"""``--loss-scale dynamic``: the vendor migration tool's default, TF's DynamicLossScale()."""
DYNAMIC = MigrateOptions(loss_scale=LossScale("dynamic"))
FIXED = MigrateOptions(loss_scale=LossScale("fixed", 1024.0))


# -- TF loss-scale objects --------------------------------------------------------------------
def test_fixed_loss_scale_becomes_fixed_manager():
    before = (
        TF
        + "a = tf.train.experimental.FixedLossScale(256)\n"
        + ("b = tf.train.experimental.FixedLossScale(loss_scale_value=2 ** 10)\n")
    )
    after = (
        IMPORT
        + TF
        + "a = FixedLossScaleManager(loss_scale=256)\n"
        + ("b = FixedLossScaleManager(loss_scale=2 ** 10)\n")
    )
    assert_migrates(before, after)


def test_dynamic_loss_scale_maps_every_parameter_and_tf_update_rule():
    before = TF + (
        "from tensorflow.train.experimental import DynamicLossScale\n"
        "ls = DynamicLossScale(initial_loss_scale=2 ** 16, increment_period=500, multiplier=4)\n"
    )
    after = (
        IMPORT
        + TF
        + (
            "from tensorflow.train.experimental import DynamicLossScale\n"
            "ls = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 16, incr_every_n_steps=500, "
            "decr_every_n_nan_or_inf=1, incr_ratio=4, decr_ratio=0.25)\n"
        )
    )
    assert_migrates(before, after)


def test_dynamic_loss_scale_defaults_and_positional_arguments():
    before = TF + (
        "a = tf.train.experimental.DynamicLossScale()\n"
        "b = tf.train.experimental.DynamicLossScale(128, 100)\n"
        "c = tf.mixed_precision.experimental.DynamicLossScale(multiplier=m + 1)\n"
    )
    after = (
        IMPORT
        + TF
        + (
            f"a = {TF_DYNAMIC}\n"
            "b = ExponentialUpdateLossScaleManager(init_loss_scale=128, incr_every_n_steps=100, "
            "decr_every_n_nan_or_inf=1, incr_ratio=2.0, decr_ratio=0.5)\n"
            "c = ExponentialUpdateLossScaleManager(init_loss_scale=2**15, incr_every_n_steps=2000, "
            "decr_every_n_nan_or_inf=1, incr_ratio=m + 1, decr_ratio=1 / (m + 1))\n"
        )
    )
    assert_migrates(before, after)


def test_dynamic_loss_scale_with_a_call_in_the_multiplier_is_reported():
    before = TF + "ls = tf.train.experimental.DynamicLossScale(multiplier=pick())\n"
    migrated = assert_migrates(before, before)
    [finding] = rule_findings(migrated, "loss_scale")
    assert finding.severity is Severity.WARNING and "decr_ratio=1 / m" in finding.fix


# -- TF loss-scaling optimizers ---------------------------------------------------------------
def test_mixed_precision_optimizer_with_dynamic_string():
    before = TF + (
        "opt = tf.train.experimental.MixedPrecisionLossScaleOptimizer(opt, loss_scale='dynamic')\n"
    )
    after = IMPORT + TF + f"opt = NPULossScaleOptimizer(opt, loss_scale_manager={TF_DYNAMIC})\n"
    assert_migrates(before, after)


def test_mixed_precision_optimizer_with_loss_scale_objects_inline_and_by_name():
    before = TF + (
        "ls = tf.train.experimental.FixedLossScale(64)\n"
        "o1 = tf.train.experimental.MixedPrecisionLossScaleOptimizer(o, ls)\n"
        "o2 = tf.train.experimental.MixedPrecisionLossScaleOptimizer(\n"
        "    o, tf.train.experimental.FixedLossScale(8))\n"
    )
    after = (
        IMPORT
        + TF
        + (
            "ls = FixedLossScaleManager(loss_scale=64)\n"
            "o1 = NPULossScaleOptimizer(o, loss_scale_manager=ls)\n"
            "o2 = NPULossScaleOptimizer(\n"
            "    o, loss_scale_manager=FixedLossScaleManager(loss_scale=8))\n"
        )
    )
    assert_migrates(before, after)


def test_loss_scale_given_by_a_numeric_or_string_variable():
    before = TF + (
        "scale = 512\nmode = 'dynamic'\n"
        "o1 = tf.train.experimental.MixedPrecisionLossScaleOptimizer(o, scale)\n"
        "o2 = tf.train.experimental.MixedPrecisionLossScaleOptimizer(o, mode)\n"
    )
    after = (
        IMPORT
        + TF
        + (
            "scale = 512\nmode = 'dynamic'\n"
            "o1 = NPULossScaleOptimizer(o, "
            "loss_scale_manager=FixedLossScaleManager(loss_scale=scale))\n"
            f"o2 = NPULossScaleOptimizer(o, loss_scale_manager={TF_DYNAMIC})\n"
        )
    )
    assert_migrates(before, after)


def test_unknown_loss_scale_is_reported_and_kept():
    before = TF + (
        "def build(o, flags):\n"
        "    return tf.train.experimental.MixedPrecisionLossScaleOptimizer(o, flags.scale)\n"
    )
    migrated = assert_migrates(before, before)
    [finding] = rule_findings(migrated, "loss_scale")
    assert finding.severity is Severity.WARNING and "flags.scale" in finding.message


def test_keras_optimizer_is_not_wrapped_in_the_tf_loss_scale_optimizer():
    before = TF + (
        "o = tf.keras.optimizers.Adam()\n"
        "o = tf.train.experimental.enable_mixed_precision_graph_rewrite(o)\n"
    )
    migrated = assert_migrates(before, before)
    assert any("Keras" in f.message for f in rule_findings(migrated, "loss_scale"))


def test_mixed_precision_graph_rewrite_becomes_loss_scaling_and_recommends_precision_mode():
    before = TF + (
        "opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(\n"
        "    tf.train.AdamOptimizer(1e-3))\n"
    )
    after = (
        IMPORT
        + TF
        + (
            "opt = NPULossScaleOptimizer(\n"
            f"    tf.train.AdamOptimizer(1e-3), loss_scale_manager={TF_DYNAMIC})\n"
        )
    )
    migrated = assert_migrates(before, after)
    [finding] = rule_findings(migrated, "loss_scale")
    assert "--precision-mode allow_mix_precision" in finding.fix
    quiet = migrate_text(before, MigrateOptions(precision_mode="allow_mix_precision"))
    assert not rule_findings(quiet, "loss_scale")


def test_horovod_script_gets_is_distributed():
    before = (
        TF
        + "import horovod.tensorflow as hvd\n"
        + (
            "opt = tf.train.experimental.MixedPrecisionLossScaleOptimizer(opt, 128)\n"
            "opt = hvd.DistributedOptimizer(opt)\n"
        )
    )
    out = migrate_text(before).output.decode()
    assert (
        "opt = NPULossScaleOptimizer(opt, loss_scale_manager=FixedLossScaleManager("
        "loss_scale=128), is_distributed=True)\n"
    ) in out
    # With --distributed none Horovod stays: the NPU all-reduce would have no HCCL to run on.
    kept = migrate_text(before, MigrateOptions(distributed=Distributed.NONE)).output.decode()
    assert "is_distributed" not in kept


def test_tf_strategy_recommends_is_distributed():
    before = TF + "opt = tf.train.experimental.MixedPrecisionLossScaleOptimizer(opt, 128)\n"
    migrated = migrate_text(before, MigrateOptions(distributed=Distributed.TF_STRATEGY))
    assert "is_distributed" not in migrated.output.decode()
    assert any("is_distributed=True" in f.fix for f in rule_findings(migrated, "loss_scale"))


def test_custom_loss_scale_subclass_is_reported():
    before = TF + "class Mine(tf.train.experimental.LossScale):\n    pass\n"
    migrated = assert_migrates(before, before)
    [finding] = rule_findings(migrated, "loss_scale")
    assert finding.severity is Severity.WARNING


# -- --loss-scale -----------------------------------------------------------------------------
def test_no_wrapping_without_the_option():
    before = TF + "opt = tf.train.AdamOptimizer(0.1)\ntrain_op = opt.minimize(loss)\n"
    migrated = assert_migrates(before, before)
    assert not rule_findings(migrated, "loss_scale")


def test_dynamic_option_wraps_an_assigned_optimizer():
    before = TF + (
        "def model_fn(features, labels, mode):\n"
        "    optimizer = tf.train.MomentumOptimizer(0.1, momentum=0.9)\n"
        "    train_op = optimizer.minimize(loss, global_step=step)\n"
    )
    after = (
        IMPORT
        + TF
        + (
            "def model_fn(features, labels, mode):\n"
            "    optimizer = NPULossScaleOptimizer(tf.train.MomentumOptimizer(0.1, momentum=0.9), "
            f"{ASCEND_DYNAMIC})\n"
            "    train_op = optimizer.minimize(loss, global_step=step)\n"
        )
    )
    assert_migrates(before, after, DYNAMIC)


def test_dynamic_option_starts_at_the_vendors_default_scale_not_2_to_the_32():
    before = TF + "train_op = tf.train.AdamOptimizer(lr).minimize(loss)\n"
    after = (
        IMPORT + TF + "train_op = NPULossScaleOptimizer(tf.train.AdamOptimizer(lr), "
        "ExponentialUpdateLossScaleManager(init_loss_scale=2**15, incr_every_n_steps=2000, "
        "decr_every_n_nan_or_inf=1, incr_ratio=2.0, decr_ratio=0.5)).minimize(loss)\n"
    )
    assert_migrates(before, after, DYNAMIC)


def test_fixed_option_wraps_an_inline_chain_and_keeps_minimize():
    before = TF + "train_op = tf.train.AdamOptimizer(lr).minimize(loss)\n"
    after = (
        IMPORT
        + TF
        + (
            "train_op = NPULossScaleOptimizer(tf.train.AdamOptimizer(lr), "
            "FixedLossScaleManager(loss_scale=1024)).minimize(loss)\n"
        )
    )
    assert_migrates(before, after, FIXED)


def test_fixed_option_keeps_a_fractional_scale():
    before = TF + "step = tf.train.AdamOptimizer(lr).minimize(loss)\n"
    options = MigrateOptions(loss_scale=LossScale("fixed", 2.5))
    assert "FixedLossScaleManager(loss_scale=2.5)" in migrate_text(before, options).output.decode()


def test_compute_and_apply_gradients_count_as_training():
    before = TF + (
        "opt = tf.train.GradientDescentOptimizer(0.1)\n"
        "grads = opt.compute_gradients(loss)\nstep = opt.apply_gradients(grads)\n"
    )
    out = migrate_text(before, FIXED).output.decode()
    assert "opt = NPULossScaleOptimizer(tf.train.GradientDescentOptimizer(0.1), " in out
    assert out.count("NPULossScaleOptimizer(") == 1


def test_optimizer_wrapped_by_another_optimizer_before_training():
    before = (
        TF
        + "import horovod.tensorflow as hvd\n"
        + (
            "opt = tf.train.AdamOptimizer(0.1)\nopt = hvd.DistributedOptimizer(opt)\n"
            "op = opt.minimize(loss)\n"
            "inner = hvd.DistributedOptimizer(tf.train.AdagradOptimizer(0.1))\ninner.minimize(loss)\n"
        )
    )
    out = migrate_text(before, DYNAMIC).output.decode()
    wrapped = f"{ASCEND_DYNAMIC}, is_distributed=True)"
    assert f"opt = NPULossScaleOptimizer(tf.train.AdamOptimizer(0.1), {wrapped}\n" in out
    assert f"NPULossScaleOptimizer(tf.train.AdagradOptimizer(0.1), {wrapped})" in out


def test_own_optimizer_subclass_applying_gradients_is_wrapped_with_a_note():
    before = TF + (
        "class AdamWeightDecayOptimizer(tf.train.Optimizer):\n    pass\n\n"
        "def create(loss):\n"
        "    optimizer = AdamWeightDecayOptimizer(learning_rate=0.1)\n"
        "    grads = tf.gradients(loss, tvars)\n"
        "    return optimizer.apply_gradients(zip(grads, tvars))\n"
    )
    migrated = migrate_text(before, FIXED)
    out = migrated.output.decode()
    assert (
        "    optimizer = NPULossScaleOptimizer(AdamWeightDecayOptimizer(learning_rate=0.1), "
        "FixedLossScaleManager(loss_scale=1024))\n"
    ) in out
    assert any("not scaled" in f.message for f in rule_findings(migrated, "loss_scale"))


@pytest.mark.parametrize(
    "code",
    [
        "opt = NPULossScaleOptimizer(tf.train.AdamOptimizer(0.1), m)\nopt.minimize(loss)\n",
        "opt = tf.train.AdamOptimizer(0.1)\nopt = NPULossScaleOptimizer(opt, m)\nopt.minimize(l)\n",
        "opt = tf.train.AdamOptimizer(0.1)\ns = NPULossScaleOptimizer(opt, m)\ns.minimize(l)\n",
        "opt = tf.train.experimental.MixedPrecisionLossScaleOptimizer(\n"
        "    tf.train.AdamOptimizer(0.1), 8)\nopt.minimize(loss)\n",
    ],
)
def test_already_loss_scaled_optimizers_are_not_wrapped_again(code):
    out = migrate_text(TF + code, FIXED).output.decode()
    assert out.count("NPULossScaleOptimizer(") == 1


def test_optimizer_not_provably_training_is_reported():
    before = TF + (
        "def get_optimizer(lr):\n    return tf.train.AdamOptimizer(lr)\n"
        "unused = tf.train.RMSPropOptimizer(0.1)\n"
        "model.compile(optimizer=tf.train.AdamOptimizer(0.1))\n"
    )
    migrated = assert_migrates(before, before, FIXED)
    lines = [f.line for f in rule_findings(migrated, "loss_scale")]
    assert lines == [3, 4, 5]


def test_users_own_minimize_and_optimizer_named_classes_are_untouched():
    before = TF + (
        "class Optimizer:\n    pass\n\n"
        "opt = MyOptimizer()\nopt.minimize(loss)\n"
        "solver = scipy.optimize.SomethingOptimizer()\nsolver.minimize(f)\n"
        "base = tf.train.Optimizer(False, 'x')\nbase.minimize(loss)\n"
    )
    migrated = assert_migrates(before, before, FIXED)
    assert not rule_findings(migrated, "loss_scale")


def test_contrib_mixed_precision_classes_become_their_npu_twins() -> None:
    assert_migrates(
        "import tensorflow as tf\n"
        "m = tf.contrib.mixed_precision.ExponentialUpdateLossScaleManager(2**32, 1000)\n"
        "opt = tf.contrib.mixed_precision.LossScaleOptimizer(opt, m)\n",
        "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
        "m = ExponentialUpdateLossScaleManager(2**32, 1000)\n"
        "opt = NPULossScaleOptimizer(opt, m)\n",
    )
