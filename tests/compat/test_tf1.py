"""tf2npu.compat.tf1: what ``import tensorflow`` gives a script after activate()."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

Run = Callable[[str], subprocess.CompletedProcess[str]]


@pytest.mark.slow
def test_compat_package_imports_without_tensorflow(run_plain: Run) -> None:
    done = run_plain(
        "import sys\n"
        "import tf2npu.compat, tf2npu.compat.contrib.table, tf2npu.compat.contrib.module\n"
        "import tf2npu.compat.contrib.layers, tf2npu.compat.contrib.hparams\n"
        "import tf2npu.compat.contrib.crf, tf2npu.compat.contrib.metrics\n"
        "import tf2npu.compat.contrib.batch_norm, tf2npu.compat.contrib.docs\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.tf
@pytest.mark.slow
def test_v1_api_names_resolve(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        from tensorflow.python.framework import versions
        names = ("Session placeholder layers.dense estimator.Estimator train.AdamOptimizer "
                 "app.run flags.DEFINE_string logging.info gfile.GFile data.Dataset "
                 "nn.rnn_cell.LSTMCell python_io.TFRecordWriter FixedLenFeature "
                 "estimator.tpu.TPUEstimator contrib.layers.layer_norm python.ops core.protobuf")
        for dotted in names.split():
            obj = tf
            for part in dotted.split("."):
                obj = getattr(obj, part)
        print(tf.__version__ == versions.__version__, tf.__version__.startswith("2.15."))
        print(tf.VERSION == tf.__version__)
    """)
    assert out.split() == ["True", "True", "True"]


@pytest.mark.tf
@pytest.mark.slow
def test_v2_behaviour_is_disabled(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        with tf.Graph().as_default() as g:
            v = tf.get_variable("v", [2, 3])
            p = tf.placeholder(tf.bool, [])
            tf.cond(p, lambda: v + 1.0, lambda: v - 1.0)
            tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
            ops = {op.type for op in g.get_operations()}
        print(tf.executing_eagerly())
        print(type(v).__name__)
        print("Switch" in ops and "Merge" in ops, "StatelessIf" in ops or "If" in ops)
        print({"Enter", "Exit", "NextIteration"} <= ops, "While" in ops or "StatelessWhile" in ops)
        print(type(v.shape[0]).__name__)
        print(type(tf.data.Dataset.range(3)).__name__)
    """)
    assert out.split() == [
        "False",
        "RefVariable",
        "True",
        "False",
        "True",
        "False",
        "Dimension",
        "DatasetV1Adapter",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_import_forms_give_the_same_tf1_module(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow
        import tensorflow as tf
        import tensorflow.compat.v1 as tf_v1
        from tensorflow.compat import v1 as tf_v1b
        from tensorflow import keras
        from tensorflow.python.ops import math_ops
        import tensorflow.contrib.layers
        from tensorflow.contrib import layers
        from tensorflow.contrib.tpu import TPUEstimator
        import tensorflow.python.tools.freeze_graph as freeze_graph
        import tensorflow.train
        import tensorflow.keras as tf_keras
        from tensorflow.keras import layers as keras_layers
        from tensorflow.keras.layers import Dense
        from tensorflow.estimator import Estimator
        print(tensorflow is tf is tf_v1 is tf_v1b)
        print(tf.compat.v2.__name__, tf.compat.v1 is tf)
        print(layers is tensorflow.contrib.layers is tf.contrib.layers)
        print(TPUEstimator is tf.estimator.tpu.TPUEstimator)
        import keras as keras_pkg
        print(keras.__name__, keras_pkg.__version__.split(".")[0])
        print(math_ops.add.__module__, callable(freeze_graph.freeze_graph))
        print(tf_keras is tf.keras, keras_layers.__name__, Dense is tf.keras.layers.Dense)
        print(hasattr(tf.train, "AdamOptimizer"), Estimator is tf.estimator.Estimator)
    """)
    assert out.splitlines() == [
        "True",
        "tensorflow.compat.v2 True",
        "True",
        "True",
        "keras.api._v1.keras 2",
        "tensorflow.python.ops.math_ops True",
        "True keras.api._v1.keras.layers True",
        "True True",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_unknown_top_level_name_is_an_attribute_error(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        print(hasattr(tf, "no_such_api"))
        try:
            tf.no_such_api
        except AttributeError as err:
            print(err)
    """)
    assert out.splitlines()[0] == "False"
    assert "module 'tensorflow' has no attribute 'no_such_api'" in out
    assert "tf.compat.v1 plus tf.contrib" in out


@pytest.mark.tf
@pytest.mark.slow
def test_activate_twice_changes_nothing(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import sys
        import tensorflow as first
        from tf2npu.compat import activate, is_active
        from tf2npu.compat.contrib.module import ContribFinder
        activate()
        import tensorflow as second
        print(first is second, is_active())
        print(sum(isinstance(f, ContribFinder) for f in sys.meta_path))
    """)
    assert out.split() == ["True", "True", "1"]


@pytest.mark.tf
@pytest.mark.slow
def test_deactivate_restores_real_tensorflow(run_plain: Run) -> None:
    done = run_plain(
        "import sys\n"
        "import tensorflow as real\n"
        "from tf2npu.compat import activate, deactivate, is_active\n"
        "activate(); deactivate()\n"
        "import tensorflow as after\n"
        "print(after is real, is_active(), real.executing_eagerly())\n"
        "print([m for m in sys.modules if m.startswith('tensorflow.contrib')])\n"
        "print(sys.modules['tensorflow.compat.v1'] is real.compat.v1)\n"
        "print('tensorflow.train' in sys.modules, 'tensorflow.keras' in sys.modules)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "True", "[]", "True", "False", "False"]


@pytest.mark.tf
@pytest.mark.slow
def test_tf1_session_script_trains(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        x_data = np.array([[0., 0.], [0., 1.], [1., 0.], [1., 1.]], np.float32)
        y_data = np.array([[0.], [1.], [1.], [2.]], np.float32)
        x = tf.placeholder(tf.float32, [None, 2])
        y = tf.placeholder(tf.float32, [None, 1])
        hidden = tf.layers.dense(x, 8, activation=tf.nn.relu,
                                 kernel_initializer=tf.glorot_uniform_initializer(seed=1))
        pred = tf.layers.dense(hidden, 1, kernel_initializer=tf.glorot_uniform_initializer(seed=2))
        loss = tf.reduce_mean(tf.square(pred - y))
        train_op = tf.train.AdamOptimizer(0.05).minimize(
            loss, global_step=tf.train.get_or_create_global_step())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, {x: x_data, y: y_data})
            for _ in range(100):
                sess.run(train_op, {x: x_data, y: y_data})
            last = sess.run(loss, {x: x_data, y: y_data})
            step = sess.run(tf.train.get_global_step())
        print(first > 0.1, last < first / 10, step)
    """)
    assert out.split() == ["True", "True", "100"]


@pytest.mark.tf
@pytest.mark.slow
def test_flags_and_app_run(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        tf.flags.DEFINE_integer("steps", 1, "how many")
        FLAGS = tf.flags.FLAGS
        def main(argv):
            tf.logging.set_verbosity(tf.logging.INFO)
            print("steps", FLAGS.steps, argv[1:])
        try:
            tf.app.run(main=main, argv=["prog", "--steps=7", "extra"])
        except SystemExit as done:
            print("exit", done.code)
    """)
    assert out.splitlines() == ["steps 7 ['extra']", "exit None"]
