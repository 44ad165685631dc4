"""API analysis: resolved references classified, with flags and Keras Horovod folded."""

import ast

from tf2npu.migrate.analysis import api_uses
from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.model import ApiStatus


def uses(source: str):
    return api_uses(ModuleIndex.build(ast.parse(source)), "t.py")


def test_calls_attributes_decorators_and_bases_are_all_reported():
    found = uses(
        "import tensorflow as tf\n"
        "class M(tf.keras.Model):\n    pass\n"
        "@tf.function\ndef f(x):\n    return tf.nn.relu(x, name=tf.float32.name)\n"
    )
    assert [(u.line, u.api, u.kind) for u in found] == [
        (2, "tf.keras.Model", "base"),
        (4, "tf.function", "decorator"),
        (6, "tf.nn.relu", "call"),
        (6, "tf.float32.name", "attribute"),
    ]


def test_flag_values_are_reported_as_the_flags_object():
    found = uses("import tensorflow as tf\nflags = tf.flags\nFLAGS = flags.FLAGS\nx = FLAGS.lr\n")
    assert [u.api for u in found] == ["tf.flags", "tf.flags.FLAGS", "tf.flags.FLAGS"]


def test_keras_horovod_is_classified_with_the_horovod_rows():
    [use] = uses("import horovod.keras as hvd\nhvd.init()\n")
    assert use.api == "hvd.keras.init"
    assert use.status is ApiStatus.TRAINING_AFTER_MIGRATION


def test_unknown_api_is_not_listed():
    [use] = uses("import tensorflow as tf\ntf.no_such_api()\n")
    assert use.status is ApiStatus.NOT_LISTED


def _migrated_uses(source: str):
    from tf2npu.testing.migration import migrate_text

    return [(u.line, u.api, u.advice) for u in migrate_text(source).result.api_uses]


def test_advice_says_rewritten_only_where_a_change_was_recorded():
    found = _migrated_uses(
        "import tensorflow as tf\n"
        "x = tf.nn.dropout(h, 0.5)\n"
        "sess = tf.Session(config=npu_config_proto())\n"
        "sess2 = tf.Session()\n"
    )
    assert found == [
        (2, "tf.nn.dropout", "tf2npu rewrote tf.nn.dropout to npu_ops.dropout here."),
        (
            3,
            "tf.Session",
            "Supported on Ascend once migrated, but tf2npu did not change this use (it is "
            "already migrated, or its form is not one the rules rewrite): check it and the "
            "findings at this line.",
        ),
        (
            4,
            "tf.Session",
            "tf2npu rewrote this use so that training runs on Ascend; see the change list.",
        ),
    ]


def test_advice_without_edits_never_claims_a_rewrite():
    [use] = api_uses(
        ModuleIndex.build(ast.parse("import tensorflow as tf\nx = tf.nn.dropout(h, 0.5)\n")),
        "t.py",
    )
    assert use.advice == (
        "Supported on Ascend once migrated to npu_ops.dropout, but tf2npu did not change this "
        "use (it is already migrated, or its form is not one the rules rewrite): check it and "
        "the findings at this line."
    )
    assert "rewrote" not in use.advice and "rewrites" not in use.advice
