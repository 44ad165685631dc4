"""session_config: every session creation gets an NPU config."""

import pytest

from tf2npu.migrate.options import MigrateOptions
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

H = "from npu_bridge.npu_init import *\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "import tensorflow as tf\ns = tf.Session('', None, cfg)\n",
            "import tensorflow as tf\ns = tf.Session('', None, npu_config_proto(config_proto=cfg))\n",
        ),
        (
            "import tensorflow.compat.v1 as tf\ns = tf.InteractiveSession()\n",
            "import tensorflow.compat.v1 as tf\ns = tf.InteractiveSession(config=npu_config_proto())\n",
        ),
        (
            "import tensorflow as tf1\ns = tf1.Session(config=tf1.ConfigProto(log_device_placement=True))\n",
            "import tensorflow as tf1\n"
            "s = tf1.Session(config=npu_config_proto(config_proto=tf1.ConfigProto(log_device_placement=True)))\n",
        ),
        (
            "from tensorflow import Session\ns = Session()\n",
            "from tensorflow import Session\ns = Session(config=npu_config_proto())\n",
        ),
        (
            "import tensorflow as tf\n"
            "with tf.train.MonitoredTrainingSession(checkpoint_dir=d, hooks=h) as s:\n    pass\n",
            "import tensorflow as tf\n"
            "with tf.train.MonitoredTrainingSession(checkpoint_dir=d, hooks=h, "
            "config=npu_config_proto()) as s:\n    pass\n",
        ),
        (
            "import tensorflow as tf\ns = tf.train.SingularMonitoredSession(hooks, None, '', cfg)\n",
            "import tensorflow as tf\n"
            "s = tf.train.SingularMonitoredSession(hooks, None, '', npu_config_proto(config_proto=cfg))\n",
        ),
        (
            "import tensorflow as tf\nc = tf.train.ChiefSessionCreator(scaffold=sc)\n",
            "import tensorflow as tf\n"
            "c = tf.train.ChiefSessionCreator(scaffold=sc, config=npu_config_proto())\n",
        ),
        (
            "import tensorflow as tf\ns = tf.train.MonitoredSession(hooks=h)\n",
            "import tensorflow as tf\n"
            "s = tf.train.MonitoredSession(hooks=h, "
            "session_creator=tf.train.ChiefSessionCreator(config=npu_config_proto()))\n",
        ),
        (
            "import tensorflow as tf\nsv = tf.train.Supervisor(logdir=d)\n"
            "with sv.managed_session(config=cfg) as s:\n    s2 = sv.prepare_or_wait_for_session()\n",
            "import tensorflow as tf\nsv = tf.train.Supervisor(logdir=d)\n"
            "with sv.managed_session(config=npu_config_proto(config_proto=cfg)) as s:\n"
            "    s2 = sv.prepare_or_wait_for_session(config=npu_config_proto())\n",
        ),
    ],
)
def test_sessions_get_the_npu_config(before, after):
    assert_migrates(before, H + after)


@pytest.mark.parametrize(
    "source",
    [
        "class Db:\n    def Session(self):\n        return 1\ns = Db().Session()\n",
        "def f(tf):\n    return tf.Session()\n",
        "import tensorflow as tf\nclass S:\n    def managed_session(self):\n        pass\n"
        "S().managed_session()\n",
        "import tensorflow as tf\ns = tf.Session(config=npu_config_proto())\n",
    ],
)
def test_left_alone(source):
    migrated = migrate_text(source)
    assert migrated.output == source.encode()
    assert not migrated.result.changes


def test_config_built_by_npu_config_proto_earlier_is_not_wrapped_again():
    source = "import tensorflow as tf\nc = npu_config_proto()\ns = tf.Session(config=c)\n"
    assert migrate_text(source).output == source.encode()


def test_kwargs_forwarding_is_reported_not_guessed():
    migrated = migrate_text("import tensorflow as tf\ns = tf.Session(**kw)\n")
    assert not migrated.result.changes
    [finding] = rule_findings(migrated, "session_config")
    assert "*args/**kwargs" in finding.message


def test_precision_mode_goes_through_a_helper_defined_once():
    before = "import tensorflow as tf\na = tf.Session()\nb = tf.Session(config=c)\n"
    after = (
        H + "import tensorflow as tf\n\n\n"
        "def npu_session_config(config_proto=None):\n"
        '    """npu_config_proto() plus the NPU options chosen when migrating (added by tf2npu)."""\n'
        "    config_proto = npu_config_proto(config_proto=config_proto)\n"
        "    for custom_op in config_proto.graph_options.rewrite_options.custom_optimizers:\n"
        '        if custom_op.name == "NpuOptimizer":\n'
        "            custom_op.parameter_map[\"precision_mode\"].s = b'allow_mix_precision'\n"
        '            custom_op.parameter_map["mix_compile_mode"].b = True\n'
        "    return config_proto\n\n"
        "a = tf.Session(config=npu_session_config())\n"
        "b = tf.Session(config=npu_session_config(config_proto=c))\n"
    )
    options = MigrateOptions(precision_mode="allow_mix_precision", mix_compile=True)
    assert_migrates(before, after, options)
