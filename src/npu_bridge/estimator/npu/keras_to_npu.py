"""``keras_to_npu.model_to_npu_estimator``: a compiled Keras model as an ``NPUEstimator``.

TensorFlow's ``model_to_estimator`` with the adapter's three changes: the config must be an
``NPURunConfig``, the model function returns an ``NPUEstimatorSpec``, and the result is an
``NPUEstimator`` (so the session carries the NPU options and the NPU training hooks run). The
Keras-specific steps (cloning the model per mode, writing its current weights as the first
checkpoint under ``<model_dir>/keras`` for warm start) are TensorFlow's own, called here.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow_estimator.python.estimator import (  # type: ignore[import-untyped]
    estimator as _estimator_lib,
)

from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator, NPUEstimatorSpec

__all__ = ["model_to_npu_estimator"]

_WHERE = "model_to_npu_estimator"


def model_to_npu_estimator(
    keras_model: Any = None,
    keras_model_path: str | None = None,
    custom_objects: dict[str, Any] | None = None,
    model_dir: str | None = None,
    checkpoint_format: str = "saver",
    config: Any = None,
    job_start_file: str = "",
) -> NPUEstimator:
    """An ``NPUEstimator`` training, evaluating and predicting with a compiled Keras model.

    Args:
        keras_model: a compiled ``tf.keras`` model; or
        keras_model_path: a saved Keras model to load (not both).
        custom_objects: custom layers/objects needed to clone or load the model.
        model_dir: the estimator's model directory (must agree with ``config.model_dir``).
        checkpoint_format: ``'saver'`` (name-based, the default here as in the adapter) or
            ``'checkpoint'`` (object-based; functional/Sequential models only).
        config: an ``NPURunConfig`` (required).
        job_start_file: passed to :class:`NPUEstimator`.

    Raises:
        ValueError: no or both model arguments, a config that is not an ``NPURunConfig``, an
            uncompiled model, or an unknown ``checkpoint_format``.
    """
    # Imported here: it loads Keras, which ``npu_init``'s star-import should not pay for.
    from tensorflow_estimator.python.estimator import keras_lib as _keras_lib

    if not isinstance(config, NPURunConfig):
        raise ValueError(
            f"{_WHERE}(config={config!r}): config must be an NPURunConfig; build one with "
            "NPURunConfig(...)"
        )
    if (keras_model is None) == (keras_model_path is None):
        raise ValueError(
            f"{_WHERE}: give exactly one of keras_model (a compiled model) or keras_model_path"
        )
    if keras_model is not None:
        _keras_lib._assert_valid_model(keras_model, custom_objects)
    config = _estimator_lib.maybe_overwrite_model_dir_and_session_config(config, model_dir)
    if keras_model is None:
        keras_model = tf.keras.models.load_model(keras_model_path, custom_objects=custom_objects)
    save_object_ckpt = _object_checkpoints(keras_model, checkpoint_format)
    if not getattr(keras_model, "optimizer", None):
        raise ValueError(
            f"{_WHERE}: the Keras model is not compiled; call model.compile(optimizer, loss) first"
        )
    keras_model_fn = _keras_lib._create_keras_model_fn(
        keras_model, custom_objects, save_object_ckpt
    )
    warm_start_path = None
    if keras_model._is_graph_network and config.is_chief:
        warm_start_path = _keras_lib._save_first_checkpoint(
            keras_model, custom_objects, config, save_object_ckpt
        )
    elif keras_model.built:
        tf.compat.v1.logging.warn(
            "%s: the subclassed Keras model already has weights; they cannot be carried "
            "into the estimator, which starts from freshly initialised weights",
            _WHERE,
        )

    def model_fn(features: Any, labels: Any, mode: str) -> NPUEstimatorSpec:
        spec = keras_model_fn(features, labels, mode)
        return NPUEstimatorSpec(**spec._asdict())

    return NPUEstimator(
        model_fn,
        config=config,
        job_start_file=job_start_file,
        warm_start_from=warm_start_path,
    )


def _object_checkpoints(keras_model: Any, checkpoint_format: str | None) -> bool:
    if checkpoint_format in (None, "checkpoint"):
        if not (keras_model._is_graph_network or isinstance(keras_model, tf.keras.Sequential)):
            raise ValueError(
                f"{_WHERE}(checkpoint_format={checkpoint_format!r}): object-based checkpoints "
                "need a functional or Sequential model; use checkpoint_format='saver'"
            )
        return True
    if checkpoint_format == "saver":
        return False
    raise ValueError(
        f"{_WHERE}(checkpoint_format={checkpoint_format!r}): use 'saver' or 'checkpoint'"
    )
