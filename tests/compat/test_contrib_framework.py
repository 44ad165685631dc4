"""tf.contrib.framework under tf2npu run: global step and restore-list helpers."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_variable_queries(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        fw = tf.contrib.framework
        step = fw.get_or_create_global_step()
        with tf.variable_scope("bert"):
            tf.get_variable("w", [1])
            with tf.variable_scope("pooler"):
                tf.get_variable("w", [1])
        tf.get_variable("cls/b", [1])
        tf.contrib.layers.layer_norm(tf.zeros([2, 3]))
        names = lambda vs: [v.op.name for v in vs]
        print(step is fw.get_global_step() is tf.train.get_global_step())
        print(names(fw.get_variables_to_restore(include=["bert"], exclude=["bert/pooler"])))
        print(names(fw.get_variables_to_restore(exclude=["global_step", "bert", "LayerNorm"])))
        print(names(fw.get_variables(suffix="w")))
        print(names(fw.get_model_variables()))
        try:
            fw.get_variables_to_restore(include="bert")
        except TypeError as err:
            print(err)
    """)
    assert out.splitlines() == [
        "True",
        "['bert/w']",
        "['cls/b']",
        "['bert/w', 'bert/pooler/w']",
        "['LayerNorm/beta', 'LayerNorm/gamma']",
        "include is provided but is not a list or a tuple: 'bert'",
    ]


def test_nest_keeps_tf115s_names(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        nest = tf.contrib.framework.nest
        from tensorflow.contrib.framework import nest as imported
        print(nest is imported, nest.is_sequence((1, 2)), nest.is_sequence(tf.zeros([2])))
        print(nest.flatten_up_to((0, 0), ([1, 2], [3, 4])), nest.map_structure(abs, (-1, [-2])))
    """)
    assert out.splitlines() == ["True True False", "[[1, 2], [3, 4]] (1, [2])"]


def test_checkpoint_utils_read_a_checkpoint(run_tf1: Callable[[str], str]) -> None:
    """Transformer-XL's avg_checkpoints.py: list_variables and load_checkpoint."""
    out = run_tf1("""
        import os
        import tempfile
        import tensorflow as tf
        tf.get_variable("w", initializer=[1.0, 2.0])
        path = os.path.join(tempfile.mkdtemp(), "model.ckpt")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, path)
        framework = tf.contrib.framework
        print(framework.list_variables(path), framework.load_checkpoint(path).get_tensor("w"),
              framework.load_variable(path, "w").tolist(),
              framework.init_from_checkpoint is tf.train.init_from_checkpoint)
    """)
    assert out.split() == ["[('w',", "[2])]", "[1.", "2.]", "[1.0,", "2.0]", "True"]
