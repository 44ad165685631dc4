"""horovod_keras: Keras Horovod callbacks and load_model -> plain Keras over the NPU API."""

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import Distributed, MigrateOptions
from tf2npu.migrate.rules import _keras_callbacks as helpers
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

NPU = "from npu_bridge.npu_init import *\n"
KERAS = "import keras\nimport tensorflow as tf\n"
HVD = "import horovod.keras as hvd\n"


def _helpers(*names, keras="keras", tf="tf"):
    blocks = ["\n".join(helpers.helper_lines(n, keras, tf)) for n in names]
    return "\n\n" + "\n\n\n".join(blocks) + "\n\n"


def test_metric_average_callback_becomes_the_helper():
    before = KERAS + HVD + "cb = [hvd.callbacks.MetricAverageCallback(device='')]\n"
    after = NPU + KERAS + _helpers(helpers.METRIC_AVERAGE) + "cb = [NpuMetricAverageCallback()]\n"
    migrated = assert_migrates(before, after)
    [info] = rule_findings(migrated, "horovod_keras")
    assert info.severity is Severity.INFO and "Ascend has no such callback" in info.message


def test_warmup_needs_the_schedule_helper_and_keeps_its_keywords():
    before = (
        KERAS
        + HVD
        + (
            "cb = hvd.callbacks.LearningRateWarmupCallback(initial_lr=lr, warmup_epochs=5, verbose=1)\n"
        )
    )
    after = (
        NPU
        + KERAS
        + _helpers(helpers.SCHEDULE, helpers.WARMUP)
        + ("cb = NpuLearningRateWarmupCallback(initial_lr=lr, warmup_epochs=5, verbose=1)\n")
    )
    assert_migrates(before, after)


def test_schedule_lines_aligned_with_the_paren_follow_the_rename():
    before = (
        KERAS
        + HVD
        + (
            "cb = hvd.callbacks.LearningRateScheduleCallback(initial_lr=lr,\n"
            "                                                multiplier=1e-1,  # x\n"
            "    start_epoch=30)\n"
        )
    )
    after = (
        NPU
        + KERAS
        + _helpers(helpers.SCHEDULE)
        + (
            "cb = NpuLearningRateScheduleCallback(initial_lr=lr,\n"
            "                                     multiplier=1e-1,  # x\n"
            "    start_epoch=30)\n"
        )
    )
    assert_migrates(before, after)


def test_tf_keras_horovod_uses_tf_keras_and_imports_tensorflow():
    before = "import horovod.tensorflow.keras as hvd\ncb = hvd.callbacks.MetricAverageCallback()\n"
    after = (
        NPU
        + "import tensorflow as tf\n"
        + _helpers(helpers.METRIC_AVERAGE, keras="tf.keras")
        + "cb = NpuMetricAverageCallback()\n"
    )
    assert_migrates(before, after)


@pytest.mark.parametrize(
    "call",
    [
        "hvd.callbacks.LearningRateWarmupCallback(lr, 5)",  # order changed between releases
        "hvd.callbacks.LearningRateWarmupCallback(initial_lr=lr, bogus=1)",
        "hvd.callbacks.MetricAverageCallback(**kw)",
    ],
)
def test_callbacks_it_cannot_map_are_left_for_the_horovod_rule(call):
    before = KERAS + HVD + f"cb = {call}\n"
    migrated = migrate_text(before)
    assert f"cb = {call}\n" in migrated.output.decode()
    assert not rule_findings(migrated, "horovod_keras")
    [error] = [f for f in rule_findings(migrated, "horovod") if f.severity is Severity.ERROR]
    assert "import is kept" in error.message and "by keyword" in error.fix


def test_load_model_restores_and_patches_the_optimizer():
    before = (
        KERAS
        + HVD
        + (
            "if resume:\n    model = hvd.load_model(path.format(epoch=3),\n"
            "                           compression=compression)\n"
        )
    )
    after = (
        NPU
        + KERAS
        + (
            "if resume:\n    model = keras.models.load_model(path.format(epoch=3))\n"
            "    npu_distributed_optimizer_wrapper(model.optimizer)\n"
        )
    )
    migrated = assert_migrates(before, after)
    [info] = rule_findings(migrated, "horovod_keras")
    assert "compression= removed" in info.message


@pytest.mark.parametrize(
    "code",
    [
        "m = hvd.load_model(p, [MyOpt])\n",  # custom_optimizers
        "m = hvd.load_model(p, custom_optimizers=[MyOpt])\n",
        "models = [hvd.load_model(p)]\n",  # not `name = load_model(...)`
    ],
)
def test_load_model_left_when_it_cannot_be_mapped(code):
    migrated = migrate_text(KERAS + HVD + code)
    assert code in migrated.output.decode()
    assert not rule_findings(migrated, "horovod_keras")


def test_tf_bound_to_something_else_leaves_the_callback():
    source = HVD + "tf = 1\ncb = hvd.callbacks.MetricAverageCallback()\n"
    migrated = migrate_text(source)
    assert "hvd.callbacks.MetricAverageCallback()" in migrated.output.decode()


def test_distributed_none_changes_nothing():
    source = KERAS + HVD + "cb = hvd.callbacks.MetricAverageCallback()\n"
    migrated = migrate_text(source, MigrateOptions(distributed=Distributed.NONE))
    assert migrated.output == source.encode()
    assert not rule_findings(migrated, "horovod_keras")


def test_helpers_are_valid_python_and_defined_once():
    for name in (helpers.METRIC_AVERAGE, helpers.SCHEDULE, helpers.WARMUP):
        compile("\n".join(helpers.helper_lines(name, "keras", "tf")), name, "exec")
    before = (
        KERAS
        + HVD
        + ("a = hvd.callbacks.MetricAverageCallback()\nb = hvd.callbacks.MetricAverageCallback()\n")
    )
    text = migrate_text(before).output.decode()
    assert text.count("class NpuMetricAverageCallback") == 1
