"""tf.contrib.estimator under tf2npu run: TF 1.15's hooks, heads and extenders."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_hooks_and_estimators_are_tf_estimators_own(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        from tensorflow.contrib import estimator as contrib_estimator
        e = tf.estimator.experimental
        print(contrib_estimator.stop_if_no_increase_hook is e.stop_if_no_increase_hook,
              contrib_estimator.stop_if_no_decrease_hook is e.stop_if_no_decrease_hook,
              contrib_estimator.stop_if_higher_hook is e.stop_if_higher_hook,
              contrib_estimator.stop_if_lower_hook is e.stop_if_lower_hook,
              contrib_estimator.make_early_stopping_hook is e.make_early_stopping_hook,
              contrib_estimator.InMemoryEvaluatorHook is e.InMemoryEvaluatorHook,
              contrib_estimator.add_metrics is tf.estimator.add_metrics,
              contrib_estimator.DNNEstimator is tf.estimator.DNNEstimator)
        try:
            contrib_estimator.replicate_model_fn
        except AttributeError as err:
            print(type(err).__name__, "NPUDistributedOptimizer" in str(err))
    """)
    assert out.splitlines() == ["True " * 7 + "True", "ContribAttributeError True"]


def test_heads_average_over_the_batch_as_contrib_did(run_tf1: Callable[[str], str]) -> None:
    """TF 1.15 contrib heads default to SUM_OVER_BATCH_SIZE (core's builders to SUM)."""
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        logits = tf.constant([[1.0], [-2.0], [0.5]])
        labels = tf.constant([[1.0], [0.0], [0.0]])
        modes = tf.estimator.ModeKeys
        binary = tf.contrib.estimator.binary_classification_head().create_loss(
            features={}, mode=modes.TRAIN, logits=logits, labels=labels)
        regression = tf.contrib.estimator.regression_head().create_loss(
            features={}, mode=modes.TRAIN, logits=logits, labels=labels)
        multi = tf.contrib.estimator.multi_class_head(3).create_loss(
            features={}, mode=modes.TRAIN, logits=tf.constant([[1.0, 0.0, -1.0], [0.0, 2.0, 0.0]]),
            labels=tf.constant([[0], [2]]))
        with tf.Session() as sess:
            b, r, m = sess.run([binary.training_loss, regression.training_loss, multi.training_loss])
        x, y = np.array([1.0, -2.0, 0.5]), np.array([1.0, 0.0, 0.0])
        want_b = np.mean(np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))))
        want_r = np.mean((x - y) ** 2)
        rows = np.array([[1.0, 0.0, -1.0], [0.0, 2.0, 0.0]])
        logp = rows - np.log(np.exp(rows).sum(1, keepdims=True))
        want_m = -(logp[0, 0] + logp[1, 2]) / 2
        print(abs(b - want_b) < 1e-6, abs(r - want_r) < 1e-6, abs(m - want_m) < 1e-6)
    """)
    assert out.split() == ["True", "True", "True"]


def test_clip_gradients_by_norm_clips_the_global_norm(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        w = tf.get_variable("w", initializer=[3.0, 4.0])
        loss = tf.reduce_sum(w * tf.constant([3.0, 4.0]))  # gradient [3, 4], norm 5
        opt = tf.contrib.estimator.clip_gradients_by_norm(
            tf.train.GradientDescentOptimizer(1.0), clip_norm=1.0)
        step = opt.minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            print(opt.get_name(), [round(float(v), 6) for v in sess.run(w)])
    """)
    assert out.split() == ["ClipByNormGradientDescent", "[2.4,", "3.2]"]


def test_forward_features_adds_features_to_predictions(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tempfile
        import tensorflow as tf

        def model_fn(features, labels, mode):
            pred = tf.layers.dense(features["x"], 1)
            return tf.estimator.EstimatorSpec(mode, predictions={"y": pred})

        def input_fn():
            ds = tf.data.Dataset.from_tensor_slices(
                {"x": [[1.0], [2.0]], "id": [7, 8]})
            return ds.batch(2)

        base = tf.estimator.Estimator(model_fn, model_dir=tempfile.mkdtemp())
        forwarding = tf.contrib.estimator.forward_features(base, "id")
        print([sorted(p) + [int(p["id"])] for p in forwarding.predict(input_fn)])
        try:
            list(tf.contrib.estimator.forward_features(base, "nope").predict(input_fn))
        except ValueError as err:
            print(str(err)[:44])
        try:
            tf.contrib.estimator.forward_features(base, 3)
        except TypeError as err:
            print(str(err)[:48])
    """)
    assert out.splitlines() == [
        "[['id', 'y', 7], ['id', 'y', 8]]",
        'keys should be exist in features. Key "nope"',
        "keys should be either a string or a list of stri",
    ]
