"""The ``tf.contrib.estimator`` pieces TF 2.15 has no public equivalent for, with TF 1.15's
semantics (``tensorflow_estimator/contrib/estimator/python/estimator``).

The early-stopping hooks, ``InMemoryEvaluatorHook``, ``add_metrics`` and the canned
``*Estimator`` classes are TF 2.15's own objects (see the contrib table); here are:

* the three heads, which are TF 2.15's v1 ``_Head`` builders with contrib's default
  ``loss_reduction=SUM_OVER_BATCH_SIZE`` (the core builders default to ``SUM``, so a plain
  alias would scale the loss, and the gradients, by the batch size);
* ``clip_gradients_by_norm``: an optimizer that clips the gradients by their global norm
  before the wrapped optimizer applies them, named ``ClipByNorm<name>`` as in TF 1.15;
* ``forward_features``: an Estimator whose predictions also carry features.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
from tensorflow_estimator.python.estimator.canned import head as _head  # type: ignore[import-untyped]

_MEAN = tf.compat.v1.losses.Reduction.SUM_OVER_BATCH_SIZE


def multi_class_head(
    n_classes: int,
    weight_column: Any = None,
    label_vocabulary: Sequence[str] | None = None,
    loss_reduction: str = _MEAN,
    loss_fn: Callable[..., Any] | None = None,
    name: str | None = None,
) -> Any:
    """A ``_Head`` for multi class classification (softmax cross entropy)."""
    return _head._multi_class_head_with_softmax_cross_entropy_loss(
        n_classes=n_classes,
        weight_column=weight_column,
        label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction,
        loss_fn=loss_fn,
        name=name,
    )


def binary_classification_head(
    weight_column: Any = None,
    thresholds: Sequence[float] | None = None,
    label_vocabulary: Sequence[str] | None = None,
    loss_reduction: str = _MEAN,
    loss_fn: Callable[..., Any] | None = None,
    name: str | None = None,
) -> Any:
    """A ``_Head`` for single label binary classification (sigmoid cross entropy)."""
    return _head._binary_logistic_head_with_sigmoid_cross_entropy_loss(
        weight_column=weight_column,
        thresholds=thresholds,
        label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction,
        loss_fn=loss_fn,
        name=name,
    )


def regression_head(
    weight_column: Any = None,
    label_dimension: int = 1,
    loss_reduction: str = _MEAN,
    loss_fn: Callable[..., Any] | None = None,
    inverse_link_fn: Callable[..., Any] | None = None,
    name: str | None = None,
) -> Any:
    """A ``_Head`` for regression (mean squared error)."""
    return _head._regression_head(
        weight_column=weight_column,
        label_dimension=label_dimension,
        loss_reduction=loss_reduction,
        loss_fn=loss_fn,
        inverse_link_fn=inverse_link_fn,
        name=name,
    )


class _TransformGradients(tf.compat.v1.train.Optimizer):  # type: ignore[misc]
    """Applies ``transform`` to the gradients, then the wrapped optimizer's update."""

    def __init__(
        self, optimizer: Any, transform: Callable[[list[Any]], list[Any]], name: str
    ) -> None:
        super().__init__(use_locking=False, name=name)
        self._optimizer = optimizer
        self._transform = transform

    def compute_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.compute_gradients(*args, **kwargs)

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
    ) -> Any:
        return self._optimizer.apply_gradients(self._transform(grads_and_vars), global_step, name)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot_names(*args, **kwargs)


def clip_gradients_by_norm(optimizer: Any, clip_norm: Any) -> Any:
    """``optimizer`` with its gradients clipped by ``tf.clip_by_global_norm(grads, clip_norm)``."""

    def clip(grads_and_vars: Any) -> list[Any]:
        gradients, variables = zip(*grads_and_vars, strict=True)
        clipped = tf.clip_by_global_norm(list(gradients), clip_norm)[0]
        return list(zip(clipped, variables, strict=True))

    return _TransformGradients(optimizer, clip, "ClipByNorm" + optimizer.get_name())


def _forward_keys(keys: str | Sequence[str] | None) -> list[str] | None:
    if keys is None:
        return None
    if isinstance(keys, str):
        return [keys]
    if not isinstance(keys, (list, tuple)):
        raise TypeError(f"keys should be either a string or a list of strings. Given: {type(keys)}")
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(
                "All items in the given keys list should be a string. There exist an item "
                f"with type: {type(key)}"
            )
    return list(keys)


def forward_features(estimator: Any, keys: str | Sequence[str] | None = None) -> Any:
    """A new Estimator whose predictions (and predict export outputs) include ``features[key]``
    for each key (every feature when ``keys`` is None); TF 1.15's errors for a key already in
    the predictions, a key missing from the features and a sparse feature."""
    wanted = _forward_keys(keys)

    def model_fn(features: Any, labels: Any, mode: Any, config: Any) -> Any:
        spec = estimator.model_fn(features, labels, mode, config)
        predictions = spec.predictions
        if predictions is None:
            return spec
        if not isinstance(predictions, dict):
            raise ValueError(
                "Predictions should be a dict to be able to forward features. "
                f"Given: {type(predictions)}"
            )
        names = list(features.keys()) if wanted is None else wanted
        for key in names:
            if key not in features:
                raise ValueError(
                    f'keys should be exist in features. Key "{key}" is not in features dict. '
                    f"features dict has following keys: {features.keys()}. Please check "
                    "arguments of forward_features."
                )
            if key in predictions:
                raise ValueError(
                    f"Cannot forward feature key ({key}). Since it does exist in predictions. "
                    f"Existing prediction keys: {predictions.keys()}. Please check arguments "
                    "of forward_features."
                )
            feature = tf.compat.v1.convert_to_tensor_or_sparse_tensor(features[key])
            if not isinstance(feature, tf.Tensor):
                raise ValueError(
                    f"Forwarded feature ({key}) should be a Tensor. Please use keys argument "
                    f"of forward_features to filter unwanted features. Type of "
                    f"features[{key}] is {type(feature)}."
                )
            predictions[key] = feature
        spec = spec._replace(predictions=predictions)
        for export_key in ("predict", "serving_default"):
            output = (spec.export_outputs or {}).get(export_key)
            if isinstance(output, tf.estimator.export.PredictOutput):
                for key in names:
                    output.outputs[key] = predictions[key]
        return spec

    return tf.compat.v1.estimator.Estimator(
        model_fn=model_fn, model_dir=estimator.model_dir, config=estimator.config
    )
