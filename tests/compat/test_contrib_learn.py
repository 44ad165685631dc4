"""tf.contrib.learn under tf2npu run: ModeKeys, RunConfig and datasets.base as in TF 1.15."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_mode_keys_run_config_and_csv_loaders(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import os
        import tempfile
        import numpy as np
        import tensorflow as tf
        from tensorflow.contrib import learn
        from tensorflow.contrib.learn.datasets import base
        keys = learn.ModeKeys
        print(keys.TRAIN, keys.EVAL, keys.INFER, keys.INFER == tf.estimator.ModeKeys.PREDICT)

        config = learn.RunConfig(num_cores=2, log_device_placement=True,
                                 gpu_memory_fraction=0.5, tf_random_seed=3,
                                 save_checkpoints_steps=10, model_dir="m")
        tc = config.tf_config
        print(isinstance(config, tf.estimator.RunConfig), tc.inter_op_parallelism_threads,
              tc.intra_op_parallelism_threads, tc.log_device_placement,
              tc.gpu_options.per_process_gpu_memory_fraction, config.tf_random_seed,
              config.save_checkpoints_steps, config.save_checkpoints_secs, config.model_dir,
              config.session_config is None)
        print(learn.RunConfig().save_checkpoints_secs, repr(learn.RunConfig().master))

        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "iris.csv"), "w") as f:
            f.write("3,2,setosa,versicolor\\n5.1,3.5,0\\n4.9,3.0,1\\n6.2,2.9,1\\n")
        with open(os.path.join(folder, "raw.csv"), "w") as f:
            f.write("1,5.1,3.5\\n0,4.9,3.0\\n")
        d = base.load_csv_with_header(os.path.join(folder, "iris.csv"), np.int32, np.float32)
        print(d.data.tolist(), d.target.tolist(), d.data.dtype, d.target.dtype)
        d = base.load_csv_without_header(os.path.join(folder, "raw.csv"), np.int32, np.float32,
                                         target_column=0)
        print(d.data.tolist(), d.target.tolist())
    """)
    assert out.splitlines() == [
        "train eval infer True",
        "True 2 2 True 0.5 3 10 None m True",
        "600 ''",
        "[[5.099999904632568, 3.5], [4.900000095367432, 3.0], [6.199999809265137, 2.9000000953674316]] [0, 1, 1] float32 int32",
        "[[5.099999904632568, 3.5], [4.900000095367432, 3.0]] [1, 0]",
    ]
