"""device_scope: with tf.device(...) removed, body kept."""

import pytest

from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

TF = "import tensorflow as tf\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "def f():\n    with tf.device('/gpu:%d' % i):  # pin\n        a = 1\n\n        b = '''x\n  y'''\n    return a\n",
            "def f():\n    a = 1\n\n    b = '''x\n  y'''\n    return a\n",
        ),
        (
            "with tf.device(\n        dev):\n    a = 1\n",
            "a = 1\n",
        ),
        (
            "with tf.name_scope('x'), tf.device(d):\n    a = 1\n",
            "with tf.name_scope('x'):\n    a = 1\n",
        ),
        (
            "if x:\n\twith tf.device(d):\n\t\ta = 1\n",
            "if x:\n\ta = 1\n",
        ),
        (
            "with tf.device(d):\n    with tf.device(e):\n        a = 1\n",
            "a = 1\n",
        ),
    ],
)
def test_removes_the_scope(before, after):
    assert_migrates(TF + before, TF + after)


def test_crlf_file():
    assert_migrates(TF.replace("\n", "\r\n") + "with tf.device(d):\r\n    a = 1\r\n",
                    TF.replace("\n", "\r\n") + "a = 1\r\n")  # fmt: skip


def test_device_as_name_and_non_with_use_are_reported():
    source = TF + "with tf.device(d) as dev:\n    a = 1\nfn = tf.device(d)\n"
    migrated = migrate_text(source)
    assert migrated.output == source.encode()
    assert len(rule_findings(migrated, "device_scope")) == 2


def test_other_device_functions_untouched():
    source = "import torch\nwith torch.device('cpu'):\n    a = 1\n"
    assert migrate_text(source).output == source.encode()


def test_nested_scopes_are_one_change_each():
    migrated = assert_migrates(
        TF + "with tf.device(d):\n    a = 0\n    with tf.device(e):\n        b = 1\n",
        TF + "a = 0\nb = 1\n",
    )
    assert [(c.rule, c.line) for c in migrated.result.changes] == [
        ("device_scope", 2),
        ("device_scope", 4),
    ]
