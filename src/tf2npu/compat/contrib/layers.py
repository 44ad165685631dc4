"""``tf.contrib.layers`` functions with TF 1.15 semantics, written on TF 2.15's v1 API.

TF 2.15 has no functional layer norm, fully-connected layer or contrib initializers with the
same variable names and maths. Variable names matter most: BERT and ALBERT checkpoints store
``.../LayerNorm/beta`` and ``.../LayerNorm/gamma``, and ``tf.train.init_from_checkpoint``
matches by name, so these functions create exactly the variables TF 1.15 contrib created
(also in ``tf.GraphKeys.MODEL_VARIABLES``, as contrib's ``model_variable`` did).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

_TRUNC_NORMAL_STDDEV_FIX = 0.87962566103423978  # stddev of a unit normal truncated at 2 sigma


def _collections_for(variables_collections: Any, name: str) -> list[str]:
    """contrib's rule: a dict maps variable name → collections, anything else applies to all."""
    if isinstance(variables_collections, dict):
        chosen = variables_collections.get(name)
    else:
        chosen = variables_collections
    return list(chosen or [])


def _model_variable(name: str, collections: list[str], **kwargs: Any) -> Any:
    """``tf.get_variable`` that also lands in MODEL_VARIABLES, like contrib ``model_variable``."""
    import tensorflow.compat.v1 as tf

    keys = tf.GraphKeys
    wanted = list(dict.fromkeys([*collections, keys.GLOBAL_VARIABLES, keys.MODEL_VARIABLES]))
    return tf.get_variable(name, collections=wanted, **kwargs)


def _collect_named_outputs(collections: Any, alias: str, outputs: Any) -> Any:
    """Tag ``outputs`` with ``alias`` and add it to ``collections`` (contrib ``utils``)."""
    import tensorflow.compat.v1 as tf

    if collections:
        alias = alias[:-1] if alias.endswith("/") else alias
        aliases = getattr(outputs, "aliases", None)
        if aliases is None:
            outputs.aliases = [alias]
        else:
            aliases.append(alias)
        tf.add_to_collections(collections, outputs)
    return outputs


def layer_norm(
    inputs: Any,
    center: bool = True,
    scale: bool = True,
    activation_fn: Callable[[Any], Any] | None = None,
    reuse: bool | None = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    begin_norm_axis: int = 1,
    begin_params_axis: int = -1,
    scope: Any = None,
) -> Any:
    """Normalise over axes ``begin_norm_axis:``; scale and shift per axes ``begin_params_axis:``.

    ``y = (x - mean) / sqrt(var + eps) * gamma + beta`` with mean/var over the norm axes,
    ``eps`` = 1e-12 (1e-3 for float16), ``beta``/``gamma`` of shape ``x.shape[begin_params_axis:]``
    created as ``<scope>/beta`` and ``<scope>/gamma`` (default scope ``LayerNorm``).

    Raises:
        ValueError: the rank of ``inputs`` is unknown, an axis is not below the rank, or the
            parameter shape is not fully defined.
    """
    import tensorflow.compat.v1 as tf

    with tf.variable_scope(scope, "LayerNorm", [inputs], reuse=reuse) as sc:
        inputs = tf.convert_to_tensor(inputs)
        shape = inputs.shape
        rank = shape.ndims
        if rank is None:
            raise ValueError(
                f"layer_norm: inputs {inputs.name} has undefined rank; give a "
                "tensor whose rank is known when the graph is built"
            )
        dtype = inputs.dtype.base_dtype
        if begin_norm_axis < 0:
            begin_norm_axis += rank
        if begin_params_axis >= rank or begin_norm_axis >= rank:
            raise ValueError(
                f"layer_norm: begin_params_axis ({begin_params_axis}) and begin_norm_axis "
                f"({begin_norm_axis}) must be < rank(inputs) ({rank})"
            )
        params_shape = shape[begin_params_axis:]
        if not params_shape.is_fully_defined():
            raise ValueError(
                f"layer_norm: inputs {inputs.name}: shape(inputs)"
                f"[{begin_params_axis}:] is not fully defined: {shape}"
            )
        beta = gamma = None
        if center:
            beta = _model_variable(
                "beta",
                _collections_for(variables_collections, "beta"),
                shape=params_shape,
                dtype=dtype,
                initializer=tf.zeros_initializer(),
                trainable=trainable,
            )
        if scale:
            gamma = _model_variable(
                "gamma",
                _collections_for(variables_collections, "gamma"),
                shape=params_shape,
                dtype=dtype,
                initializer=tf.ones_initializer(),
                trainable=trainable,
            )
        mean, variance = tf.nn.moments(inputs, list(range(begin_norm_axis, rank)), keep_dims=True)
        epsilon = 1e-3 if dtype == tf.float16 else 1e-12
        outputs = tf.nn.batch_normalization(
            inputs, mean, variance, offset=beta, scale=gamma, variance_epsilon=epsilon
        )
        outputs.set_shape(shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


def _relu(x: Any) -> Any:
    import tensorflow.compat.v1 as tf

    return tf.nn.relu(x)


def fully_connected(
    inputs: Any,
    num_outputs: int,
    activation_fn: Callable[[Any], Any] | None = _relu,
    normalizer_fn: Callable[..., Any] | None = None,
    normalizer_params: dict[str, Any] | None = None,
    weights_initializer: Any = "xavier",
    weights_regularizer: Callable[[Any], Any] | None = None,
    biases_initializer: Any = "zeros",
    biases_regularizer: Callable[[Any], Any] | None = None,
    reuse: bool | None = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: Any = None,
) -> Any:
    """``activation_fn(normalizer_fn(inputs @ weights + biases))`` over the last axis.

    Defaults as in TF 1.15: ReLU, Xavier-uniform weights, zero biases, scope
    ``fully_connected`` with variables ``weights`` and ``biases``; no biases when a
    ``normalizer_fn`` is given or ``biases_initializer`` is None.
    """
    import tensorflow.compat.v1 as tf

    if isinstance(num_outputs, bool) or not isinstance(num_outputs, int):
        raise ValueError(
            f"fully_connected: num_outputs type should be int, got "
            f"{type(num_outputs).__name__} ({num_outputs!r})"
        )
    if weights_initializer == "xavier":
        weights_initializer = xavier_initializer()
    if biases_initializer == "zeros":
        biases_initializer = tf.zeros_initializer()
    with tf.variable_scope(scope, "fully_connected", [inputs], reuse=reuse) as sc:
        inputs = tf.convert_to_tensor(inputs)
        dtype = inputs.dtype.base_dtype
        depth = inputs.shape[-1]
        if tf.compat.dimension_value(depth) is None:
            raise ValueError(
                f"fully_connected: the last dimension of {inputs.name} must be "
                f"known, got shape {inputs.shape}"
            )
        weights = _model_variable(
            "weights",
            _collections_for(variables_collections, "weights"),
            shape=[tf.compat.dimension_value(depth), num_outputs],
            dtype=dtype,
            initializer=weights_initializer,
            regularizer=weights_regularizer,
            trainable=trainable,
        )
        if inputs.shape.ndims == 2:
            outputs = tf.matmul(inputs, weights)
        else:
            outputs = tf.tensordot(inputs, weights, [[inputs.shape.ndims - 1], [0]])
            outputs.set_shape(inputs.shape[:-1].concatenate([num_outputs]))
        if normalizer_fn is None and biases_initializer is not None:
            biases = _model_variable(
                "biases",
                _collections_for(variables_collections, "biases"),
                shape=[num_outputs],
                dtype=dtype,
                initializer=biases_initializer,
                regularizer=biases_regularizer,
                trainable=trainable,
            )
            outputs = tf.nn.bias_add(outputs, biases)
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


def flatten(inputs: Any, outputs_collections: Any = None, scope: Any = None) -> Any:
    """Reshape ``inputs`` of shape ``[batch, ...]`` to ``[batch, k]`` (name scope ``Flatten``)."""
    import tensorflow.compat.v1 as tf

    with tf.name_scope(scope, "Flatten", [inputs]) as sc:
        outputs = tf.layers.flatten(tf.convert_to_tensor(inputs))
        return _collect_named_outputs(outputs_collections, sc, outputs)


def variance_scaling_initializer(
    factor: float = 2.0,
    mode: str = "FAN_IN",
    uniform: bool = False,
    seed: int | None = None,
    dtype: Any = None,
) -> Any:
    """He/Xavier-style initializer with TF 1.15 contrib maths.

    ``n`` is fan_in, fan_out or their mean (``mode``); uniform draws from ``±sqrt(3*factor/n)``,
    otherwise a normal truncated at 2 sigma with stddev ``sqrt(1.3*factor/n)``.

    Raises:
        TypeError: ``dtype`` is not floating point, or ``mode`` is not FAN_IN/FAN_OUT/FAN_AVG.
    """
    import tensorflow.compat.v1 as tf

    dtype = tf.float32 if dtype is None else tf.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(
            f"variance_scaling_initializer: cannot create an initializer for "
            f"non-floating point type {dtype.name}"
        )
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(
            f"variance_scaling_initializer: unknown mode {mode!r}; use one of "
            "FAN_IN, FAN_OUT, FAN_AVG"
        )
    v1_mode = {"FAN_IN": "fan_in", "FAN_OUT": "fan_out", "FAN_AVG": "fan_avg"}[mode]
    # The v1 constructor warns when given a dtype; float32 is its default, so pass only others.
    extra = {} if dtype == tf.float32 else {"dtype": dtype}
    if uniform:
        return tf.variance_scaling_initializer(
            scale=factor, mode=v1_mode, distribution="uniform", seed=seed, **extra
        )
    # tf.compat.v1 divides the stddev by _TRUNC_NORMAL_STDDEV_FIX; contrib used 1.3 instead.
    return tf.variance_scaling_initializer(
        scale=1.3 * factor * _TRUNC_NORMAL_STDDEV_FIX**2,
        mode=v1_mode,
        distribution="truncated_normal",
        seed=seed,
        **extra,
    )


def xavier_initializer(uniform: bool = True, seed: int | None = None, dtype: Any = None) -> Any:
    """Glorot initializer: uniform in ``±sqrt(6/(fan_in+fan_out))`` by default."""
    return variance_scaling_initializer(
        factor=1.0, mode="FAN_AVG", uniform=uniform, seed=seed, dtype=dtype
    )


def _check_scale(kind: str, scale: Any) -> bool:
    """Validate a regularizer scale; False when it is 0 (regularizer disabled)."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(
            f"{kind}: scale cannot be an integer: {scale!r}; give a float, e.g. {float(scale)}"
        )
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"{kind}: setting a scale less than 0 on a regularizer: {scale}")
        if scale == 0.0:
            return False
    return True


def l2_regularizer(scale: float, scope: str | None = None) -> Callable[[Any], Any]:
    """A function ``weights -> scale * sum(weights**2) / 2``; returns None when scale is 0."""
    import tensorflow.compat.v1 as tf

    if not _check_scale("l2_regularizer", scale):
        return lambda _: None

    def l2(weights: Any) -> Any:
        with tf.name_scope(scope, "l2_regularizer", [weights]) as name:
            factor = tf.convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return tf.multiply(factor, tf.nn.l2_loss(weights), name=name)

    return l2


def l1_regularizer(scale: float, scope: str | None = None) -> Callable[[Any], Any]:
    """A function ``weights -> scale * sum(|weights|)``; returns None when scale is 0."""
    import tensorflow.compat.v1 as tf

    if not _check_scale("l1_regularizer", scale):
        return lambda _: None

    def l1(weights: Any) -> Any:
        with tf.name_scope(scope, "l1_regularizer", [weights]) as name:
            factor = tf.convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return tf.multiply(factor, tf.reduce_sum(tf.abs(weights)), name=name)

    return l1


def l1_l2_regularizer(
    scale_l1: float = 1.0, scale_l2: float = 1.0, scope: str | None = None
) -> Callable[[Any], Any]:
    """A function ``weights -> l1(weights) + l2(weights)`` named ``scope`` (``l1_l2_regularizer``).

    Like TF 1.15: None when both scales are 0, only the other regularizer (under ``scope``)
    when one of them is 0; integer or negative scales are errors.
    """
    import tensorflow.compat.v1 as tf

    for kind, scale in (("scale_l1", scale_l1), ("scale_l2", scale_l2)):
        if isinstance(scale, numbers.Integral):
            raise ValueError(
                f"l1_l2_regularizer: {kind} cannot be an integer: {scale!r}; "
                f"give a float, e.g. {float(scale)}"
            )
    scope = scope or "l1_l2_regularizer"
    if scale_l1 == 0.0 and scale_l2 == 0.0:
        return lambda _: None
    if scale_l1 == 0.0:
        return l2_regularizer(scale_l2, scope)
    if scale_l2 == 0.0:
        return l1_regularizer(scale_l1, scope)
    parts = (l1_regularizer(scale_l1), l2_regularizer(scale_l2))

    def l1_l2(weights: Any) -> Any:
        with tf.name_scope(scope, "sum_regularizer", [weights]) as name:
            return tf.add_n([part(weights) for part in parts], name=name)

    return l1_l2
