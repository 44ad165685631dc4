"""``tf.contrib.layers.batch_norm`` with TF 1.15's defaults and variable names.

TF 1.15 contrib built its common path on the v1 ``BatchNormalization`` layer inside a
``BatchNorm`` variable scope; TF 2.15 keeps that layer (Keras 2 legacy layers), so this does the
same: variables ``<scope>/beta``, ``<scope>/gamma`` (only with ``scale=True``: contrib's default
is False), ``<scope>/moving_mean`` and ``<scope>/moving_variance``, all also in
MODEL_VARIABLES, and moving-average updates in ``tf.GraphKeys.UPDATE_OPS`` (or applied in place
with ``updates_collections=None``). The rarely used paths that need contrib's own kernels
(``batch_weights``, ``zero_debias_moving_mean=True``, other update collections) raise an error
that says so instead of computing something different.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tf2npu.compat.contrib.layers import _collect_named_outputs, _collections_for
from tf2npu.errors import Tf2NpuError

_UPDATE_OPS = "update_ops"


def _refuse(argument: str, value: Any, fix: str) -> None:
    raise Tf2NpuError(
        f"tf.contrib.layers.batch_norm: {argument}={value!r} is not provided by "
        f"tf2npu run (TF 2.15 has no kernel path with TF 1.15's semantics); {fix}"
    )


def _check_supported(batch_weights: Any, zero_debias: bool, updates_collections: Any) -> None:
    if batch_weights is not None:
        _refuse(
            "batch_weights",
            "<tensor>",
            "weight the batch statistics yourself with "
            "tf.nn.weighted_moments and tf.nn.batch_normalization",
        )
    if zero_debias:
        _refuse("zero_debias_moving_mean", True, "leave it False (the default)")
    if updates_collections not in (_UPDATE_OPS, None):
        _refuse(
            "updates_collections",
            updates_collections,
            "use tf.GraphKeys.UPDATE_OPS (the default) or None (update in place)",
        )


def batch_norm(
    inputs: Any,
    decay: float = 0.999,
    center: bool = True,
    scale: bool = False,
    epsilon: float = 0.001,
    activation_fn: Callable[[Any], Any] | None = None,
    param_initializers: dict[str, Any] | None = None,
    param_regularizers: dict[str, Any] | None = None,
    updates_collections: Any = _UPDATE_OPS,
    is_training: Any = True,
    reuse: bool | None = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    batch_weights: Any = None,
    fused: bool | None = None,
    data_format: str = "NHWC",
    zero_debias_moving_mean: bool = False,
    scope: Any = None,
    renorm: bool = False,
    renorm_clipping: dict[str, Any] | None = None,
    renorm_decay: float = 0.99,
    adjustment: Any = None,
) -> Any:
    """Batch-normalise ``inputs`` over all axes but the channel axis (last, or 1 for NCHW).

    Training (``is_training`` True or a true bool tensor) uses the batch statistics and
    creates update ops ``moving = moving * decay + batch * (1 - decay)``; inference uses the
    moving statistics.

    Raises:
        ValueError: ``data_format`` is not NHWC or NCHW.
        Tf2NpuError: an argument whose TF 1.15 path tf2npu does not provide (see module doc).
    """
    import tensorflow.compat.v1 as tf

    _check_supported(batch_weights, zero_debias_moving_mean, updates_collections)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"batch_norm: data_format={data_format!r} must be 'NHWC' or 'NCHW'")
    inits = dict(param_initializers or {})
    regs = dict(param_regularizers or {})
    with tf.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse) as sc:
        inputs = tf.convert_to_tensor(inputs)
        layer = tf.layers.BatchNormalization(
            axis=1 if data_format == "NCHW" else -1,
            momentum=decay,
            epsilon=epsilon,
            center=center,
            scale=scale,
            beta_initializer=inits.get("beta", tf.zeros_initializer()),
            gamma_initializer=inits.get("gamma", tf.ones_initializer()),
            moving_mean_initializer=inits.get("moving_mean", tf.zeros_initializer()),
            moving_variance_initializer=inits.get("moving_variance", tf.ones_initializer()),
            beta_regularizer=regs.get("beta"),
            gamma_regularizer=regs.get("gamma"),
            renorm=renorm,
            renorm_clipping=renorm_clipping,
            renorm_momentum=renorm_decay,
            adjustment=adjustment,
            fused=fused,
            trainable=trainable,
            name=sc.name,
            _scope=sc,
            _reuse=reuse,
        )
        outputs = layer.apply(inputs, training=is_training)
        _register_variables(tf, layer, variables_collections)
        if updates_collections is None and layer.updates:
            # In place only: the layer also put them in UPDATE_OPS, where a trainer running
            # UPDATE_OPS would apply them a second time per step.
            pending = tf.get_collection_ref(tf.GraphKeys.UPDATE_OPS)
            pending[:] = [op for op in pending if all(op is not u for u in layer.updates)]
            with tf.control_dependencies(layer.updates):
                outputs = tf.identity(outputs)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


def _register_variables(tf: Any, layer: Any, variables_collections: Any) -> None:
    """Add the layer's variables to MODEL_VARIABLES and the user's collections, as contrib did."""
    for short in ("beta", "gamma", "moving_mean", "moving_variance"):
        variable = getattr(layer, short, None)
        if variable is None:
            continue
        for key in [tf.GraphKeys.MODEL_VARIABLES, *_collections_for(variables_collections, short)]:
            if variable not in tf.get_collection(key):
                tf.add_to_collection(key, variable)
