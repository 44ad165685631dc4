"""tf2npu.compat.contrib.layers: TF 1.15 contrib.layers maths and variable names."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_layer_norm_matches_numpy_and_bert_variable_names(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        x = np.array([[[1., 2., 3., 4.], [2., 0., -1., 5.]]], np.float32)
        with tf.variable_scope("bert/embeddings"):
            y = tf.contrib.layers.layer_norm(inputs=tf.constant(x), begin_norm_axis=-1,
                                             begin_params_axis=-1)
        y_all = tf.contrib.layers.layer_norm(tf.constant(x), scope="whole")  # axes 1 and 2
        names = [v.op.name for v in tf.global_variables()]
        model = [v.op.name for v in tf.model_variables()]
        gamma = tf.global_variables()[1]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, got_all = sess.run([y, y_all])
            sess.run(gamma.assign([2., 2., 2., 2.]))
            scaled = sess.run(y)
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        want = (x - mean) / np.sqrt(var + 1e-12)
        want_all = (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True))
        print(names)
        print(model == names)
        print(np.allclose(got, want, atol=1e-5), np.allclose(got_all, want_all, atol=1e-5))
        print(np.allclose(scaled, 2 * want, atol=1e-5))
    """)
    assert out.splitlines() == [
        "['bert/embeddings/LayerNorm/beta', 'bert/embeddings/LayerNorm/gamma', "
        "'whole/beta', 'whole/gamma']",
        "True",
        "True True",
        "True",
    ]


def test_layer_norm_errors(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        cases = {
            "rank": tf.placeholder(tf.float32, None),
            "axis": tf.zeros([2, 3]),
            "params": tf.placeholder(tf.float32, [2, None]),
        }
        for label, x in cases.items():
            try:
                tf.contrib.layers.layer_norm(x, begin_norm_axis=2 if label == "axis" else 1,
                                             scope=label)
            except ValueError as err:
                print(label, err)
    """)
    lines = out.splitlines()
    assert lines[0].startswith("rank layer_norm: inputs Placeholder:0 has undefined rank")
    assert lines[1] == (
        "axis layer_norm: begin_params_axis (-1) and begin_norm_axis (2) must be < rank(inputs) (2)"
    )
    assert lines[2].startswith(
        "params layer_norm: inputs Placeholder_1:0: shape(inputs)[-1:] is not fully defined"
    )


def test_fully_connected(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        x = np.array([[1., -2., 3.], [0.5, 0., -1.]], np.float32)
        y = tf.contrib.layers.fully_connected(tf.constant(x), 4)
        seq = tf.contrib.layers.fully_connected(tf.zeros([2, 5, 3]), 6, activation_fn=None,
                                                scope="seq")
        print([v.op.name for v in tf.trainable_variables()])
        print(seq.shape.as_list())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w, b, got = sess.run(["fully_connected/weights:0", "fully_connected/biases:0", y])
        print(np.allclose(got, np.maximum(x @ w + b, 0.0)), w.shape, np.abs(w).max() > 0)
        try:
            tf.contrib.layers.fully_connected(tf.constant(x), 4.0)
        except ValueError as err:
            print(err)
    """)
    assert out.splitlines() == [
        "['fully_connected/weights', 'fully_connected/biases', 'seq/weights', 'seq/biases']",
        "[2, 5, 6]",
        "True (3, 4) True",
        "fully_connected: num_outputs type should be int, got float (4.0)",
    ]


def test_initializers(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        xavier = tf.get_variable("x", [200, 300],
                                 initializer=tf.contrib.layers.xavier_initializer(seed=1))
        glorot = tf.get_variable("g", [200, 300],
                                 initializer=tf.glorot_uniform_initializer(seed=1))
        he = tf.get_variable("h", [1000, 500],
                             initializer=tf.contrib.layers.variance_scaling_initializer(seed=3))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a, b, h = sess.run([xavier, glorot, he])
        sigma = np.sqrt(1.3 * 2.0 / 1000)
        print(np.array_equal(a, b), np.abs(a).max() <= np.sqrt(6.0 / 500))
        print(abs(h.std() / (0.87962566 * sigma) - 1) < 0.01, np.abs(h).max() <= 2 * sigma)
        for kwargs in ({"mode": "FAN_SUM"}, {"dtype": tf.int32}):
            try:
                tf.contrib.layers.variance_scaling_initializer(**kwargs)
            except TypeError as err:
                print(err)
    """)
    assert out.splitlines() == [
        "True True",
        "True True",
        "variance_scaling_initializer: unknown mode 'FAN_SUM'; use one of FAN_IN, FAN_OUT, FAN_AVG",
        "variance_scaling_initializer: cannot create an initializer for non-floating point "
        "type int32",
    ]


def test_regularizers(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        w = tf.constant([[1., -2.], [3., 4.]])
        l2 = tf.contrib.layers.l2_regularizer(0.5)(w)
        l1 = tf.contrib.layers.l1_regularizer(0.25)(w)
        print(l2.op.name, l1.op.name)
        with tf.Session() as sess:
            print(sess.run([l2, l1]))
        print(tf.contrib.layers.l2_regularizer(0.0)(w))
        for scale in (1, -0.1):
            try:
                tf.contrib.layers.l2_regularizer(scale)
            except ValueError as err:
                print(err)
    """)
    assert out.splitlines() == [
        "l2_regularizer l1_regularizer",
        "[7.5, 2.5]",
        "None",
        "l2_regularizer: scale cannot be an integer: 1; give a float, e.g. 1.0",
        "l2_regularizer: setting a scale less than 0 on a regularizer: -0.1",
    ]


def test_l1_l2_regularizer_sums_both_and_falls_back_to_one(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        w = tf.constant([[1., -2.], [3., 4.]])
        both = tf.contrib.layers.l1_l2_regularizer(0.25, 0.5)(w)
        only_l2 = tf.contrib.layers.l1_l2_regularizer(scale_l1=0.0, scale_l2=0.5)(w)
        only_l1 = tf.contrib.layers.l1_l2_regularizer(0.25, 0.0, scope="reg")(w)
        print(both.op.name, only_l2.op.name, only_l1.op.name)
        with tf.Session() as sess:
            print(sess.run([both, only_l2, only_l1]))
        print(tf.contrib.layers.l1_l2_regularizer(scale_l1=0.0, scale_l2=0.0)(w))
        for scales in ((1, 0.5), (0.5, -0.1)):
            try:
                tf.contrib.layers.l1_l2_regularizer(*scales)
            except ValueError as err:
                print(err)
    """)
    assert out.splitlines() == [
        "l1_l2_regularizer l1_l2_regularizer_1 reg",
        "[10.0, 7.5, 2.5]",
        "None",
        "l1_l2_regularizer: scale_l1 cannot be an integer: 1; give a float, e.g. 1.0",
        "l2_regularizer: setting a scale less than 0 on a regularizer: -0.1",
    ]


def test_layer_norm_restores_bert_style_checkpoint(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import os, tempfile
        import tensorflow as tf
        ckpt = os.path.join(tempfile.mkdtemp(), "model.ckpt")
        with tf.Graph().as_default():  # a checkpoint laid out like BERT's
            with tf.variable_scope("bert/embeddings/LayerNorm"):
                tf.get_variable("gamma", initializer=[3.0, 3.0])
                tf.get_variable("beta", initializer=[1.0, 1.0])
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                tf.train.Saver().save(sess, ckpt)
        with tf.Graph().as_default():  # BERT's modeling.layer_norm call
            with tf.variable_scope("bert/embeddings"):
                y = tf.contrib.layers.layer_norm(inputs=tf.constant([[1.0, 3.0]]),
                                                 begin_norm_axis=-1, begin_params_axis=-1,
                                                 scope=None)
            names = {v.op.name: v.op.name for v in tf.trainable_variables()}
            tf.train.init_from_checkpoint(ckpt, names)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                print(sorted(names), sess.run(y).round(4).tolist())
    """)
    assert out.strip() == (
        "['bert/embeddings/LayerNorm/beta', 'bert/embeddings/LayerNorm/gamma'] [[-2.0, 4.0]]"
    )


def test_batch_norm_training_inference_and_names(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        x = np.array([[1., 10.], [3., 30.]], np.float32)
        training = tf.placeholder_with_default(True, [])
        y = tf.contrib.layers.batch_norm(tf.constant(x), decay=0.5, is_training=training)
        y_inplace = tf.contrib.layers.batch_norm(tf.constant(x), scale=True,
                                                 updates_collections=None, scope="inplace")
        print([v.op.name for v in tf.global_variables()])
        print(len(tf.model_variables()), len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            train_out = sess.run(y)
            sess.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
            mean = sess.run("BatchNorm/moving_mean:0")
            infer_out = sess.run(y, {training: False})
            sess.run(y_inplace)
            inplace_mean = sess.run("inplace/moving_mean:0")
        batch = (x - x.mean(0)) / np.sqrt(x.var(0) + 0.001)
        var = 0.5 * 1.0 + 0.5 * x.var(0)  # 2-D input: the non-fused path, biased variance
        print(np.allclose(train_out, batch, atol=1e-4), mean.tolist())
        print(np.allclose(infer_out, (x - mean) / np.sqrt(var + 0.001), atol=1e-4))
        print(np.allclose(inplace_mean, 0.001 * x.mean(0)))
        try:
            tf.contrib.layers.batch_norm(tf.constant(x), zero_debias_moving_mean=True, scope="z")
        except Exception as err:
            print(type(err).__name__, err)
    """)
    assert out.splitlines()[:5] == [
        "['BatchNorm/beta', 'BatchNorm/moving_mean', 'BatchNorm/moving_variance', "
        "'inplace/gamma', 'inplace/beta', 'inplace/moving_mean', 'inplace/moving_variance']",
        "7 2",
        "True [1.0, 10.0]",
        "True",
        "True",
    ]
    assert out.splitlines()[5].startswith(
        "Tf2NpuError tf.contrib.layers.batch_norm: zero_debias_moving_mean=True is not provided "
        "by tf2npu run"
    )
