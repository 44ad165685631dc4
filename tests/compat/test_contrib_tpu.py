"""tf.contrib.tpu under tf2npu run: BERT's TPUEstimator set-up trains on the CPU."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_tpu_estimator_trains_and_evaluates_on_cpu(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tempfile
        import numpy as np
        import tensorflow as tf
        from tensorflow.contrib import cluster_resolver as contrib_cluster_resolver
        from tensorflow.contrib import tpu as contrib_tpu

        def input_fn(params):
            x = np.arange(32, dtype=np.float32).reshape(16, 2) / 10.0
            y = (x.sum(1, keepdims=True) > 1.5).astype(np.float32)
            ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat()
            return ds.apply(tf.contrib.data.map_and_batch(
                lambda f, l: (f, l), params["batch_size"], drop_remainder=True))

        def model_fn(features, labels, mode, params):
            logits = tf.layers.dense(features["x"], 1)
            loss = tf.losses.sigmoid_cross_entropy(labels, logits)
            opt = tf.train.GradientDescentOptimizer(0.1)
            if params["use_tpu"]:
                opt = contrib_tpu.CrossShardOptimizer(opt)
            if mode == tf.estimator.ModeKeys.EVAL:  # BERT's eval path: (metric_fn, tensors)
                def metric_fn(labels, logits):
                    hits = tf.cast(logits > 0, tf.float32)
                    return {"accuracy": tf.metrics.accuracy(labels=labels, predictions=hits)}
                return contrib_tpu.TPUEstimatorSpec(
                    mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
            train_op = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
            return contrib_tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)

        use_tpu, tpu_name = False, None
        resolver = None
        if use_tpu and tpu_name:  # as in BERT's run_pretraining.py
            resolver = contrib_cluster_resolver.TPUClusterResolver(tpu_name)
        config = contrib_tpu.RunConfig(
            cluster=resolver, master=None, model_dir=tempfile.mkdtemp(),
            save_checkpoints_steps=1000,
            tpu_config=contrib_tpu.TPUConfig(
                iterations_per_loop=1000, num_shards=8,
                per_host_input_for_training=contrib_tpu.InputPipelineConfig.PER_HOST_V2))
        estimator = contrib_tpu.TPUEstimator(
            use_tpu=use_tpu, model_fn=model_fn, config=config, train_batch_size=4,
            eval_batch_size=4, params={"use_tpu": use_tpu})
        estimator.train(input_fn=input_fn, max_steps=3)
        print(estimator.get_variable_value("global_step"))
        result = estimator.evaluate(input_fn=input_fn, steps=2)
        print(result["global_step"], 0.0 <= result["accuracy"] <= 1.0, "loss" in result)
    """)
    assert out.splitlines() == ["3", "3 True True"]


def test_tpu_cluster_resolver_with_empty_name_is_no_tpu(run_tf1: Callable[[str], str]) -> None:
    """TF 1.15: tpu="" was not resolved (master "", no cluster spec in graph mode); TF 2.15's
    own resolver raised "Please provide a TPU Name to connect to"; tpu=None raised in both."""
    out = run_tf1("""
        import os
        import tensorflow as tf
        os.environ.pop("TPU_NAME", None)
        for resolver in (tf.contrib.cluster_resolver.TPUClusterResolver(""),
                         tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")):
            print(repr(resolver.master()), resolver.cluster_spec(), resolver.get_job_name(),
                  resolver.num_accelerators(), resolver.environment)
        config = tf.contrib.tpu.RunConfig(cluster=resolver)
        print(repr(config.master), config.cluster_spec)
        try:
            tf.contrib.cluster_resolver.TPUClusterResolver(None)
        except ValueError as err:
            print(err)
    """)
    assert out.splitlines() == [
        "'' None None {'TPU': 0} google",
        "'' None None {'TPU': 0} google",
        "'' None",
        "Please provide a TPU Name to connect to.",
    ]
