"""The ``tf.contrib.learn`` pieces that outlived it, with TF 1.15's semantics.

TF 1.15's ``tf.contrib.learn`` was deprecated in favour of ``tf.estimator``; what scripts still
import from it, and this module keeps:

* ``ModeKeys``: ``TRAIN``/``EVAL``/``INFER`` (``'train'``, ``'eval'``, ``'infer'``), the values
  ``tf.estimator.ModeKeys`` has (its ``PREDICT`` is ``'infer'``), so both compare equal;
* ``RunConfig``: ``tf.estimator.RunConfig`` plus contrib's arguments ``master``,
  ``num_cores``, ``log_device_placement``, ``gpu_memory_fraction`` and
  ``evaluation_master``. In TF 1.15 the middle three only built the ``tf_config`` property
  (a ConfigProto), which contrib.learn's own Estimator read and ``tf.estimator`` never did;
  it is built the same way here;
* ``datasets.base``: ``Dataset``/``Datasets`` and the CSV loaders of the iris-style tutorials
  (``load_csv_with_header``: first row ``n_samples,n_features,[target names...]``).
"""

from __future__ import annotations

import collections
import csv
import types
from typing import Any

import numpy as np
import tensorflow as tf


class ModeKeys:
    """Standard names for model modes (TF 1.15 ``tf.contrib.learn.ModeKeys``)."""

    TRAIN = "train"
    EVAL = "eval"
    INFER = "infer"


_USE_DEFAULT = 0


class RunConfig(tf.compat.v1.estimator.RunConfig):  # type: ignore[misc]
    """``tf.contrib.learn.RunConfig``: ``tf.estimator.RunConfig`` with contrib's arguments."""

    def __init__(
        self,
        master: str | None = None,
        num_cores: int = 0,
        log_device_placement: bool = False,
        gpu_memory_fraction: float = 1,
        tf_random_seed: int | None = None,
        save_summary_steps: int = 100,
        save_checkpoints_secs: Any = _USE_DEFAULT,
        save_checkpoints_steps: int | None = None,
        keep_checkpoint_max: int = 5,
        keep_checkpoint_every_n_hours: int = 10000,
        log_step_count_steps: int = 100,
        protocol: str | None = None,
        evaluation_master: str = "",
        model_dir: str | None = None,
        session_config: Any = None,
        session_creation_timeout_secs: int = 7200,
    ) -> None:
        if save_checkpoints_secs == _USE_DEFAULT:  # TF 1.15: 0 means "the default"
            save_checkpoints_secs = 600 if save_checkpoints_steps is None else None
        super().__init__(
            model_dir=model_dir,
            tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps,
            save_checkpoints_secs=save_checkpoints_secs,
            session_config=session_config,
            keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps,
            protocol=protocol,
            session_creation_timeout_secs=session_creation_timeout_secs,
        )
        if master is not None:
            self._master = master
        self._evaluation_master = evaluation_master or ""
        self._tf_config = tf.compat.v1.ConfigProto(
            log_device_placement=log_device_placement,
            inter_op_parallelism_threads=num_cores,
            intra_op_parallelism_threads=num_cores,
            gpu_options=tf.compat.v1.GPUOptions(
                per_process_gpu_memory_fraction=gpu_memory_fraction
            ),
        )

    @property
    def tf_config(self) -> Any:
        """The ConfigProto contrib.learn's Estimator ran with (``tf.estimator`` ignores it)."""
        return self._tf_config


Dataset = collections.namedtuple("Dataset", ["data", "target"])
Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def load_csv_with_header(
    filename: str, target_dtype: Any, features_dtype: Any, target_column: int = -1
) -> Dataset:
    """A ``Dataset`` from a CSV whose first row is ``n_samples,n_features,...``."""
    with tf.io.gfile.GFile(filename) as f:
        rows = csv.reader(f)
        header = next(rows)
        n_samples, n_features = int(header[0]), int(header[1])
        data = np.zeros((n_samples, n_features), dtype=features_dtype)
        target = np.zeros((n_samples,), dtype=target_dtype)
        for i, row in enumerate(rows):
            target[i] = np.asarray(row.pop(target_column), dtype=target_dtype)
            data[i] = np.asarray(row, dtype=features_dtype)
    return Dataset(data=data, target=target)


def load_csv_without_header(
    filename: str, target_dtype: Any, features_dtype: Any, target_column: int = -1
) -> Dataset:
    """A ``Dataset`` from a CSV of rows only; the target is column ``target_column``."""
    with tf.io.gfile.GFile(filename) as f:
        rows = [list(row) for row in csv.reader(f)]
    target = np.array([row.pop(target_column) for row in rows], dtype=target_dtype)
    return Dataset(data=np.array(rows, dtype=features_dtype), target=target)


def _module(name: str, doc: str, **names: Any) -> types.ModuleType:
    module = types.ModuleType(name, doc)
    module.__dict__.update(names)
    return module


base = _module(
    "tensorflow.contrib.learn.datasets.base",
    "tf.contrib.learn.datasets.base as provided by tf2npu run.",
    Dataset=Dataset,
    Datasets=Datasets,
    load_csv_with_header=load_csv_with_header,
    load_csv_without_header=load_csv_without_header,
)
datasets = _module(
    "tensorflow.contrib.learn.datasets",
    "tf.contrib.learn.datasets as provided by tf2npu run (base only).",
    base=base,
)
