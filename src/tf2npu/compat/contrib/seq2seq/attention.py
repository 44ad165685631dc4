"""TF 1.15's attention mechanisms (``tf.contrib.seq2seq.BahdanauAttention`` and friends).

A mechanism is built once over the encoder ``memory`` ``[batch, max_time, depth]``: it masks
the memory past ``memory_sequence_length`` and projects it to ``keys`` with the Dense layer
``memory_layer`` (no bias). Each decoder step calls it with a ``query`` and the previous
alignments and gets the new alignments ``[batch, max_time]`` (and the next attention state,
the same tensor). Scores:

* Bahdanau: ``sum(v * tanh(keys + W_q query))``; with ``normalize=True``
  ``v`` becomes ``g * v / |v|`` and a bias ``b`` is added inside the tanh;
* Luong: ``query . keys``, times a learnt scalar ``g`` with ``scale=True``.

Scores past each sequence's length are set to ``score_mask_value`` (-inf) before the
probability function (softmax by default). The monotonic forms add a learnt scalar bias and
turn scores into choosing probabilities with a sigmoid (``monotonic_attention``).

Variables, as TF 1.15 names them: ``memory_layer/kernel`` where the mechanism is built;
``bahdanau_attention/{query_layer/kernel, attention_v, attention_g, attention_b}`` or
``luong_attention/attention_g`` where it is called (inside the ``AttentionWrapper`` scope).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow.compat.v1 as tf

from tf2npu.compat.contrib.rnn.base import zero_state_tensors


class AttentionMechanism:
    """Base class of every attention mechanism (an ``AttentionWrapper`` accepts only these)."""

    @property
    def alignments_size(self) -> Any:
        raise NotImplementedError

    @property
    def state_size(self) -> Any:
        raise NotImplementedError


def _check_layer(role: str, layer: Any) -> None:
    if layer is not None and not isinstance(layer, tf.layers.Layer):
        raise TypeError(f"{role} is not a Layer: {type(layer).__name__}")


def _prepare_memory(memory: Any, memory_sequence_length: Any, check_inner_dims: bool) -> Any:
    """``memory`` as tensors, zeroed past each sequence's length."""
    memory = tf.nest.map_structure(lambda m: tf.convert_to_tensor(m, name="memory"), memory)
    if check_inner_dims:
        for m in tf.nest.flatten(memory):
            if not m.get_shape()[2:].is_fully_defined():
                raise ValueError(
                    f"Expected memory {m.name} to have fully defined inner dims, "
                    f"but saw shape: {m.get_shape()}"
                )
    if memory_sequence_length is None:
        return memory
    lengths = tf.convert_to_tensor(memory_sequence_length, name="memory_sequence_length")
    first = tf.nest.flatten(memory)[0]
    mask = tf.sequence_mask(lengths, maxlen=tf.shape(first)[1], dtype=first.dtype)

    def masked(m: Any) -> Any:
        rank = m.get_shape().ndims
        rank = rank if rank is not None else tf.rank(m)
        extra = tf.ones(rank - 2, dtype=tf.int32)
        return m * tf.reshape(mask, tf.concat((tf.shape(mask), extra), 0))

    return tf.nest.map_structure(masked, memory)


def _mask_score(score: Any, memory_sequence_length: Any, score_mask_value: Any) -> Any:
    """Scores past each memory length become ``score_mask_value`` (lengths must be > 0)."""
    if memory_sequence_length is None:
        return score
    message = "All values in memory_sequence_length must be greater than zero."
    with tf.control_dependencies([tf.assert_positive(memory_sequence_length, message=message)]):
        mask = tf.sequence_mask(memory_sequence_length, maxlen=tf.shape(score)[1])
    return tf.where(mask, score, score_mask_value * tf.ones_like(score))


class _BaseAttentionMechanism(AttentionMechanism):
    """Stores the query/memory layers, masks and projects the memory once."""

    def __init__(
        self,
        query_layer: Any,
        memory: Any,
        probability_fn: Callable[[Any, Any], Any],
        memory_sequence_length: Any = None,
        memory_layer: Any = None,
        check_inner_dims_defined: bool = True,
        score_mask_value: Any = None,
        custom_key_value_fn: Callable[[Any, Any], tuple[Any, Any]] | None = None,
        name: str | None = None,
    ) -> None:
        _check_layer("query_layer", query_layer)
        _check_layer("memory_layer", memory_layer)
        self._query_layer = query_layer
        self._memory_layer = memory_layer
        self.dtype = memory_layer.dtype
        if not callable(probability_fn):
            raise TypeError(
                f"probability_fn must be callable, saw type: {type(probability_fn).__name__}"
            )
        if score_mask_value is None:
            score_mask_value = tf.as_dtype(memory_layer.dtype).as_numpy_dtype(-np.inf)
        self._probability_fn: Callable[[Any, Any], Any] = lambda score, prev: probability_fn(
            _mask_score(score, memory_sequence_length, score_mask_value), prev
        )
        with tf.name_scope(name, "BaseAttentionMechanismInit", tf.nest.flatten(memory)):
            self._values = _prepare_memory(memory, memory_sequence_length, check_inner_dims_defined)
            self._keys = memory_layer(self._values) if memory_layer else self._values
            if custom_key_value_fn is not None:
                self._keys, self._values = custom_key_value_fn(self._keys, self._values)
            self._batch_size = (
                tf.compat.dimension_value(self._keys.shape[0]) or tf.shape(self._keys)[0]
            )
            self._alignments_size = (
                tf.compat.dimension_value(self._keys.shape[1]) or tf.shape(self._keys)[1]
            )

    @property
    def memory_layer(self) -> Any:
        return self._memory_layer

    @property
    def query_layer(self) -> Any:
        return self._query_layer

    @property
    def values(self) -> Any:
        return self._values

    @property
    def keys(self) -> Any:
        return self._keys

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def alignments_size(self) -> Any:
        return self._alignments_size

    @property
    def state_size(self) -> Any:
        return self._alignments_size

    def initial_alignments(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros ``[batch_size, alignments_size]``."""
        return zero_state_tensors(self._alignments_size, batch_size, dtype)

    def initial_state(self, batch_size: Any, dtype: Any) -> Any:
        """The initial attention state: the initial alignments."""
        return self.initial_alignments(batch_size, dtype)


def _dense(units: int, name: str, dtype: Any) -> Any:
    return tf.layers.Dense(units, name=name, use_bias=False, dtype=dtype)


def _luong_score(query: Any, keys: Any, scale: Any) -> Any:
    depth, key_units = query.get_shape()[-1], keys.get_shape()[-1]
    if depth != key_units:
        raise ValueError(
            "Incompatible or unknown inner dimensions between query and keys.  "
            f"Query ({query}) has units: {depth}.  Keys ({keys}) have units: {key_units}.  "
            f"Perhaps you need to set num_units to the keys' dimension ({key_units})?"
        )
    score = tf.squeeze(tf.matmul(tf.expand_dims(query, 1), keys, transpose_b=True), [1])
    return score if scale is None else scale * score


def _bahdanau_score(query: Any, keys: Any, v: Any, g: Any = None, b: Any = None) -> Any:
    query = tf.expand_dims(query, 1)
    if g is not None and b is not None:
        normed_v = g * v * tf.rsqrt(tf.reduce_sum(tf.square(v)))
        return tf.reduce_sum(normed_v * tf.tanh(keys + query + b), [2])
    return tf.reduce_sum(v * tf.tanh(keys + query), [2])


def _softmax_of_score(probability_fn: Callable[[Any], Any] | None) -> Callable[[Any, Any], Any]:
    fn = probability_fn or tf.nn.softmax
    return lambda score, _prev: fn(score)


def _luong_g(query: Any) -> Any:
    return tf.get_variable(
        "attention_g", dtype=query.dtype, initializer=tf.ones_initializer, shape=()
    )


def _bahdanau_vars(num_units: int, normalize: bool, dtype: Any) -> tuple[Any, Any, Any]:
    v = tf.get_variable("attention_v", [num_units], dtype=dtype)
    if not normalize:
        return v, None, None
    g = tf.get_variable(
        "attention_g",
        dtype=dtype,
        initializer=tf.constant_initializer(math.sqrt(1.0 / num_units)),
        shape=(),
    )
    b = tf.get_variable("attention_b", [num_units], dtype=dtype, initializer=tf.zeros_initializer())
    return v, g, b


class LuongAttention(_BaseAttentionMechanism):
    """Multiplicative attention (Luong et al. 2015); ``scale=True`` learns a scalar ``g``."""

    def __init__(
        self,
        num_units: int,
        memory: Any,
        memory_sequence_length: Any = None,
        scale: bool = False,
        probability_fn: Callable[[Any], Any] | None = None,
        score_mask_value: Any = None,
        dtype: Any = None,
        custom_key_value_fn: Callable[[Any, Any], tuple[Any, Any]] | None = None,
        name: str = "LuongAttention",
    ) -> None:
        super().__init__(
            query_layer=None,
            memory_layer=_dense(num_units, "memory_layer", dtype or tf.float32),
            memory=memory,
            probability_fn=_softmax_of_score(probability_fn),
            memory_sequence_length=memory_sequence_length,
            score_mask_value=score_mask_value,
            custom_key_value_fn=custom_key_value_fn,
            name=name,
        )
        self._num_units = num_units
        self._scale = scale
        self._name = name

    def __call__(self, query: Any, state: Any) -> tuple[Any, Any]:
        """Alignments ``[batch, max_time]`` for ``query``; the next state is the same tensor."""
        with tf.variable_scope(None, "luong_attention", [query]):
            score = _luong_score(query, self._keys, _luong_g(query) if self._scale else None)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class BahdanauAttention(_BaseAttentionMechanism):
    """Additive attention (Bahdanau et al. 2015); ``normalize=True`` is the weight-normed form."""

    def __init__(
        self,
        num_units: int,
        memory: Any,
        memory_sequence_length: Any = None,
        normalize: bool = False,
        probability_fn: Callable[[Any], Any] | None = None,
        score_mask_value: Any = None,
        dtype: Any = None,
        custom_key_value_fn: Callable[[Any, Any], tuple[Any, Any]] | None = None,
        name: str = "BahdanauAttention",
    ) -> None:
        dtype = dtype or tf.float32
        super().__init__(
            query_layer=_dense(num_units, "query_layer", dtype),
            memory_layer=_dense(num_units, "memory_layer", dtype),
            memory=memory,
            probability_fn=_softmax_of_score(probability_fn),
            custom_key_value_fn=custom_key_value_fn,
            memory_sequence_length=memory_sequence_length,
            score_mask_value=score_mask_value,
            name=name,
        )
        self._num_units = num_units
        self._normalize = normalize
        self._name = name

    def __call__(self, query: Any, state: Any) -> tuple[Any, Any]:
        """Alignments ``[batch, max_time]`` for ``query``; the next state is the same tensor."""
        with tf.variable_scope(None, "bahdanau_attention", [query]):
            processed = self.query_layer(query) if self.query_layer else query
            v, g, b = _bahdanau_vars(self._num_units, self._normalize, query.dtype)
            score = _bahdanau_score(processed, self._keys, v, g, b)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


def hardmax(logits: Any, name: str | None = None) -> Any:
    """One-hot vectors at the index of each row's largest logit."""
    with tf.name_scope(name, "Hardmax", [logits]):
        logits = tf.convert_to_tensor(logits, name="logits")
        depth = tf.compat.dimension_value(logits.get_shape()[-1])
        if depth is None:
            depth = tf.shape(logits)[-1]
        return tf.one_hot(tf.argmax(logits, -1), depth, dtype=logits.dtype)


def safe_cumprod(x: Any, *args: Any, **kwargs: Any) -> Any:
    """``cumprod(x)`` as ``exp(cumsum(log(x)))`` with ``x`` clipped to ``[tiny, 1]``."""
    with tf.name_scope(None, "SafeCumprod", [x]):
        x = tf.convert_to_tensor(x, name="x")
        tiny = np.finfo(x.dtype.as_numpy_dtype).tiny
        return tf.exp(tf.cumsum(tf.log(tf.clip_by_value(x, tiny, 1)), *args, **kwargs))


def monotonic_attention(p_choose_i: Any, previous_attention: Any, mode: str) -> Any:
    """Monotonic attention from choosing probabilities (Raffel et al. 2017).

    ``a[i] = p[i] * sum_{k <= i} a_prev[k] * prod_{k <= j < i} (1 - p[j])``, computed
    recursively (``"recursive"``), in closed form (``"parallel"``) or for 0/1 ``p``
    (``"hard"``).
    """
    p = tf.convert_to_tensor(p_choose_i, name="p_choose_i")
    prev = tf.convert_to_tensor(previous_attention, name="previous_attention")
    if mode == "recursive":
        batch = tf.compat.dimension_value(p.shape[0]) or tf.shape(p)[0]
        shifted = tf.concat([tf.ones((batch, 1)), 1 - p[:, :-1]], 1)
        scanned = tf.scan(
            lambda acc, yz: tf.reshape(yz[0] * acc + yz[1], (batch,)),
            [tf.transpose(shifted), tf.transpose(prev)],
            tf.zeros((batch,)),
        )
        return p * tf.transpose(scanned)
    if mode == "parallel":
        cumprod = safe_cumprod(1 - p, axis=1, exclusive=True)
        return p * cumprod * tf.cumsum(prev / tf.clip_by_value(cumprod, 1e-10, 1.0), axis=1)
    if mode == "hard":
        p = p * tf.cumsum(prev, axis=1)
        return p * tf.cumprod(1 - p, axis=1, exclusive=True)
    raise ValueError("mode must be 'recursive', 'parallel', or 'hard'.")


def _monotonic_probability_fn(
    score: Any, previous: Any, sigmoid_noise: float, mode: str, seed: int | None = None
) -> Any:
    if sigmoid_noise > 0:
        score += sigmoid_noise * tf.random_normal(tf.shape(score), dtype=score.dtype, seed=seed)
    p_choose_i = tf.cast(score > 0, score.dtype) if mode == "hard" else tf.sigmoid(score)
    return monotonic_attention(p_choose_i, previous, mode)


class _BaseMonotonicAttentionMechanism(_BaseAttentionMechanism):
    """Monotonic mechanisms start from all attention on the first memory entry."""

    def initial_alignments(self, batch_size: Any, dtype: Any) -> Any:
        zeros = tf.zeros((batch_size,), dtype=tf.int32)
        return tf.one_hot(zeros, self._alignments_size, dtype=dtype)


def _score_bias(init: float, dtype: Any) -> Any:
    return tf.get_variable("attention_score_bias", dtype=dtype, initializer=init)


class BahdanauMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Bahdanau scores plus a learnt bias, through ``monotonic_attention``."""

    def __init__(
        self,
        num_units: int,
        memory: Any,
        memory_sequence_length: Any = None,
        normalize: bool = False,
        score_mask_value: Any = None,
        sigmoid_noise: float = 0.0,
        sigmoid_noise_seed: int | None = None,
        score_bias_init: float = 0.0,
        mode: str = "parallel",
        dtype: Any = None,
        name: str = "BahdanauMonotonicAttention",
    ) -> None:
        dtype = dtype or tf.float32
        fn = functools.partial(
            _monotonic_probability_fn,
            sigmoid_noise=sigmoid_noise,
            mode=mode,
            seed=sigmoid_noise_seed,
        )
        super().__init__(
            query_layer=_dense(num_units, "query_layer", dtype),
            memory_layer=_dense(num_units, "memory_layer", dtype),
            memory=memory,
            probability_fn=fn,
            memory_sequence_length=memory_sequence_length,
            score_mask_value=score_mask_value,
            name=name,
        )
        self._num_units = num_units
        self._normalize = normalize
        self._name = name
        self._score_bias_init = score_bias_init

    def __call__(self, query: Any, state: Any) -> tuple[Any, Any]:
        """Monotonic alignments ``[batch, max_time]`` given the previous ones in ``state``."""
        with tf.variable_scope(None, "bahdanau_monotonic_attention", [query]):
            processed = self.query_layer(query) if self.query_layer else query
            v, g, b = _bahdanau_vars(self._num_units, self._normalize, query.dtype)
            score = _bahdanau_score(processed, self._keys, v, g, b)
            score += _score_bias(self._score_bias_init, processed.dtype)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class LuongMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Luong scores plus a learnt bias, through ``monotonic_attention``."""

    def __init__(
        self,
        num_units: int,
        memory: Any,
        memory_sequence_length: Any = None,
        scale: bool = False,
        score_mask_value: Any = None,
        sigmoid_noise: float = 0.0,
        sigmoid_noise_seed: int | None = None,
        score_bias_init: float = 0.0,
        mode: str = "parallel",
        dtype: Any = None,
        name: str = "LuongMonotonicAttention",
    ) -> None:
        fn = functools.partial(
            _monotonic_probability_fn,
            sigmoid_noise=sigmoid_noise,
            mode=mode,
            seed=sigmoid_noise_seed,
        )
        super().__init__(
            query_layer=None,
            memory_layer=_dense(num_units, "memory_layer", dtype or tf.float32),
            memory=memory,
            probability_fn=fn,
            memory_sequence_length=memory_sequence_length,
            score_mask_value=score_mask_value,
            name=name,
        )
        self._num_units = num_units
        self._scale = scale
        self._score_bias_init = score_bias_init
        self._name = name

    def __call__(self, query: Any, state: Any) -> tuple[Any, Any]:
        """Monotonic alignments ``[batch, max_time]`` given the previous ones in ``state``."""
        with tf.variable_scope(None, "luong_monotonic_attention", [query]):
            score = _luong_score(query, self._keys, _luong_g(query) if self._scale else None)
            score += _score_bias(self._score_bias_init, query.dtype)
        alignments = self._probability_fn(score, state)
        return alignments, alignments
