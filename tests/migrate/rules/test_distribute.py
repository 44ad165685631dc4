"""distribute: tf.distribute strategies and GPU device management."""

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import Distributed, MigrateOptions
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

IMPORT = "from npu_bridge.npu_init import *\n"
TF = "import tensorflow as tf\n"
STRATEGY = MigrateOptions(distributed=Distributed.TF_STRATEGY)


@pytest.mark.parametrize("mode", [Distributed.AUTO, Distributed.NONE, Distributed.HOROVOD])
def test_strategies_are_reported_without_tf_strategy(mode):
    before = TF + (
        "s1 = tf.distribute.MirroredStrategy()\n"
        "s2 = tf.contrib.distribute.MirroredStrategy(num_gpus=2)\n"
        "s3 = tf.distribute.experimental.MultiWorkerMirroredStrategy()\n"
        "s4 = tf.distribute.OneDeviceStrategy('/gpu:0')\n"
    )
    migrated = assert_migrates(before, before, MigrateOptions(distributed=mode))
    findings = rule_findings(migrated, "distribute")
    assert [f.line for f in findings] == [2, 3, 4, 5]
    assert all(f.severity is Severity.WARNING for f in findings)
    assert all("--distributed tf_strategy" in f.fix and "Horovod" in f.fix for f in findings)
    assert f"--distributed {mode.value}" in findings[0].message


def test_tf_strategy_makes_replicating_strategies_npu_strategies():
    before = TF + (
        "s1 = tf.distribute.MirroredStrategy()\n"
        "s2 = tf.contrib.distribute.MirroredStrategy(num_gpus=2)\n"
        "s3 = tf.distribute.experimental.MultiWorkerMirroredStrategy()\n"
        "s4 = tf.distribute.OneDeviceStrategy(device='/gpu:0')\n"
        "s5 = tf.contrib.distribute.CollectiveAllReduceStrategy(num_gpus_per_worker=8)\n"
    )
    after = (
        IMPORT
        + TF
        + (
            "s1 = npu_strategy.NPUStrategy()\n"
            "s2 = npu_strategy.NPUStrategy()\n"
            "s3 = npu_strategy.NPUStrategy()\n"
            "s4 = npu_strategy.NPUStrategy()\n"
            "s5 = npu_strategy.NPUStrategy()\n"
        )
    )
    migrated = assert_migrates(before, after, STRATEGY)
    removed = [f for f in rule_findings(migrated, "distribute") if "removed" in f.message]
    assert [f.line for f in removed] == [3, 5, 6]
    assert "num_gpus=2" in removed[0].message
    assert all(f.severity is Severity.INFO for f in rule_findings(migrated, "distribute"))


def test_multi_line_strategy_arguments_are_removed_with_the_call():
    before = TF + (
        "strategy = tf.distribute.MirroredStrategy(\n"
        "    devices=['/gpu:0', '/gpu:1'],  # two cards\n"
        "    cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())\n"
        "with strategy.scope():\n    model = build()\n"
    )
    after = (
        IMPORT
        + TF
        + ("strategy = npu_strategy.NPUStrategy()\nwith strategy.scope():\n    model = build()\n")
    )
    assert_migrates(before, after, STRATEGY)


def test_run_config_keeps_train_distribute():
    before = TF + (
        "config = tf.estimator.RunConfig(train_distribute=tf.distribute.MirroredStrategy(),\n"
        "                                eval_distribute=strategy)\n"
    )
    after = (
        IMPORT
        + TF
        + (
            "config = NPURunConfig(train_distribute=npu_strategy.NPUStrategy(),\n"
            "                                eval_distribute=strategy)\n"
        )
    )
    assert_migrates(before, after, STRATEGY)


@pytest.mark.parametrize(
    "api",
    [
        "tf.distribute.experimental.ParameterServerStrategy",
        "tf.contrib.distribute.ParameterServerStrategy",
        "tf.distribute.experimental.TPUStrategy",
    ],
)
def test_unsupported_strategies_are_errors_with_tf_strategy(api):
    before = TF + f"s = {api}()\n"
    migrated = assert_migrates(before, before, STRATEGY)
    [finding] = rule_findings(migrated, "distribute")
    assert finding.severity is Severity.ERROR and "not supported" in finding.message
    auto = rule_findings(migrate_text(before), "distribute")
    assert [f.severity for f in auto] == [Severity.WARNING]
    assert "not supported" in auto[0].message


def test_strategy_class_references_and_subclasses_are_reported_not_rewritten():
    before = TF + (
        "cls = tf.distribute.MirroredStrategy\n"
        "class Mine(tf.distribute.Strategy):\n    pass\n"
        "s = tf.distribute.experimental.CentralStorageStrategy()\n"
    )
    migrated = assert_migrates(before, before, STRATEGY)
    findings = rule_findings(migrated, "distribute")
    assert [f.line for f in findings] == [2, 3, 5]
    assert all(f.severity is Severity.WARNING for f in findings)
    assert "subclass" in findings[1].message


def test_aliases_resolve_and_lookalikes_stay():
    before = (
        "import tensorflow.compat.v1 as tf1\nfrom tensorflow import distribute as dist\n"
        "a = tf1.distribute.MirroredStrategy()\nb = dist.OneDeviceStrategy('/cpu:0')\n"
        "c = mylib.MirroredStrategy()\n"
        "def f(tf):\n    return tf.distribute.MirroredStrategy()\n"
    )
    after = IMPORT + (
        "import tensorflow.compat.v1 as tf1\nfrom tensorflow import distribute as dist\n"
        "a = npu_strategy.NPUStrategy()\nb = npu_strategy.NPUStrategy()\n"
        "c = mylib.MirroredStrategy()\n"
        "def f(tf):\n    return tf.distribute.MirroredStrategy()\n"
    )
    assert_migrates(before, after, STRATEGY)


# -- GPU device management ----------------------------------------------------------------------
def test_gpu_device_management_is_reported_and_kept():
    before = TF + (
        "gpus = tf.config.experimental.list_physical_devices('GPU')\n"
        "for gpu in gpus:\n"
        "    tf.config.experimental.set_memory_growth(gpu, True)\n"
        "    tf.config.experimental.set_virtual_device_configuration(\n"
        "        gpu, [tf.config.experimental.VirtualDeviceConfiguration(memory_limit=1024)])\n"
        "tf.config.set_soft_device_placement(True)\n"
        "tf.config.experimental.set_visible_devices(gpus[0], 'GPU')\n"
        "if tf.test.is_gpu_available():\n    fmt = 'channels_first'\n"
        "opts = tf.GPUOptions(allow_growth=True)\n"
    )
    migrated = assert_migrates(before, before)
    findings = rule_findings(migrated, "distribute")
    assert [f.line for f in findings] == [2, 4, 5, 6, 7, 8, 9, 11]
    assert all(f.severity is Severity.INFO and f.fix for f in findings)
    assert "set_memory_growth" in findings[1].message


def test_device_listing_is_reported_only_for_gpus():
    before = TF + (
        "a = tf.config.experimental.list_physical_devices('CPU')\n"
        "b = tf.config.experimental.list_logical_devices(device_type='GPU')\n"
        "c = tf.config.experimental.list_physical_devices()\n"
    )
    migrated = assert_migrates(before, before)
    assert [f.line for f in rule_findings(migrated, "distribute")] == [3]
