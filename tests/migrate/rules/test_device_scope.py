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


TOWER = (
    TF
    + "for i in range(FLAGS.num_gpus):\n"
    + "    with tf.device('/gpu:%d' % i):\n"
    + "        with tf.name_scope('tower_%d' % i):\n"
    + "            loss = model(x)\n"
)


def test_tower_loop_is_reported_once_per_loop():
    migrated = assert_migrates(
        TOWER,
        TF
        + "for i in range(FLAGS.num_gpus):\n"
        + "    with tf.name_scope('tower_%d' % i):\n"
        + "        loss = model(x)\n",
    )
    towers = [f for f in rule_findings(migrated, "device_scope") if "tower loop" in f.message]
    assert [(f.line, f.severity.value) for f in towers] == [(2, "warning")]
    assert towers[0].message.startswith(
        "tower loop `for i in range(FLAGS.num_gpus):` (line 2) built one copy of the model per "
        "device under tf.device scopes, which were removed"
    )
    assert "NPUDistributedOptimizer" in towers[0].fix


@pytest.mark.parametrize(
    "loop",
    [
        "for d in devices:\n    with tf.device(d):\n        y = f(x)\n",
        "for i, d in enumerate(devs):\n    with tf.device(d), tf.name_scope('t'):\n        y = 1\n",
        "for i in range(n):\n    with tf.device(f'/gpu:{i}'): y = 1\n",
    ],
)
def test_tower_loop_forms(loop):
    found = rule_findings(migrate_text(TF + loop), "device_scope")
    assert sum("tower loop" in f.message for f in found) == 1


@pytest.mark.parametrize(
    "source",
    [
        "for i in range(3):\n    with tf.device('/cpu:0'):\n        y = f(i)\n",
        "with tf.device('/gpu:0'):\n    for i in range(3):\n        y = f(i)\n",
        "for i in range(3):\n    def g(d):\n        with tf.device(d):\n            return 1\n",
    ],
)
def test_loops_that_do_not_choose_the_device_are_not_towers(source):
    found = rule_findings(migrate_text(TF + source), "device_scope")
    assert not any("tower loop" in f.message for f in found)
