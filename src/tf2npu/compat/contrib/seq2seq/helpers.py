"""TF 1.15's decoding helpers: what ``BasicDecoder`` feeds the cell at each step.

* ``TrainingHelper`` reads the ground-truth inputs (teacher forcing); an entry is finished
  once ``time + 1 >= sequence_length``;
* ``ScheduledEmbeddingTrainingHelper`` / ``ScheduledOutputTrainingHelper`` replace some of
  them, each entry with probability ``sampling_probability``, by the embedded sample (id -1
  marks "not sampled") or by the output itself;
* ``GreedyEmbeddingHelper`` (argmax) and ``SampleEmbeddingHelper`` (categorical sample,
  optionally at ``softmax_temperature``) feed back the embedded ids until ``end_token``;
* ``InferenceHelper`` and ``CustomHelper`` take the user's functions.

When every entry is finished the next inputs are zeros (training) or the start inputs
(inference), so the loop never reads past the end of a TensorArray.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import tensorflow.compat.v1 as tf

from tf2npu.compat.contrib.rnn.base import transpose_batch_time


def _call_sampler(sample_n_fn: Callable[[Any], Any], sample_shape: Any) -> Any:
    """``sample_n_fn(prod(sample_shape))`` reshaped to ``sample_shape + event shape``."""
    with tf.name_scope(None, "call_sampler", values=[sample_shape]):
        sample_shape = tf.convert_to_tensor(sample_shape, dtype=tf.int32, name="sample_shape")
        pad = tf.cast(tf.equal(tf.rank(sample_shape), 0), tf.int32)
        sample_shape = tf.reshape(
            sample_shape, tf.pad(tf.shape(sample_shape), paddings=[[pad, 0]], constant_values=1)
        )
        samples = sample_n_fn(tf.reduce_prod(sample_shape))
        final_shape = tf.concat([sample_shape, tf.shape(samples)[1:]], 0)
        return tf.reshape(samples, final_shape)


def bernoulli_sample(
    probs: Any = None,
    logits: Any = None,
    dtype: Any = tf.int32,
    sample_shape: Any = (),
    seed: int | None = None,
) -> Any:
    """Bernoulli draws (``uniform < probs``) of shape ``sample_shape + probs.shape``."""
    probs = tf.sigmoid(logits, name="probs") if probs is None else tf.convert_to_tensor(probs)
    batch_shape = tf.shape(probs)

    def sample_n(n: Any) -> Any:
        uniform = tf.random_uniform(tf.concat([[n], batch_shape], 0), seed=seed, dtype=probs.dtype)
        return tf.cast(tf.less(uniform, probs), dtype)

    return _call_sampler(sample_n, sample_shape)


def categorical_sample(
    logits: Any, dtype: Any = tf.int32, sample_shape: Any = (), seed: int | None = None
) -> Any:
    """Categorical draws from ``logits`` (``tf.multinomial``), ``sample_shape + batch``."""
    logits = tf.convert_to_tensor(logits, name="logits")
    event_size = tf.shape(logits)[-1]
    batch_shape = tf.shape(logits)[:-1]

    def sample_n(n: Any) -> Any:
        flat = logits if logits.shape.ndims == 2 else tf.reshape(logits, [-1, event_size])
        out_dtype = tf.int64 if logits.dtype.size > 4 else tf.int32
        draws = tf.multinomial(flat, n, seed=seed, output_dtype=out_dtype)
        draws = tf.reshape(tf.transpose(draws), tf.concat([[n], batch_shape], 0))
        return tf.cast(draws, dtype)

    return _call_sampler(sample_n, sample_shape)


def _unstack_ta(inp: Any) -> Any:
    return tf.TensorArray(
        dtype=inp.dtype, size=tf.shape(inp)[0], element_shape=inp.get_shape()[1:]
    ).unstack(inp)


def _embedding_fn(embedding: Any) -> Callable[[Any], Any]:
    if callable(embedding):
        return embedding  # type: ignore[no-any-return]
    return lambda ids: tf.nn.embedding_lookup(embedding, ids)


def _check_sampling_probability(value: Any) -> Any:
    prob = tf.convert_to_tensor(value, name="sampling_probability")
    if prob.get_shape().ndims not in (0, 1):
        raise ValueError(
            "sampling_probability must be either a scalar or a vector. "
            f"saw shape: {prob.get_shape()}"
        )
    return prob


class Helper(abc.ABC):
    """Interface of the helpers ``BasicDecoder`` takes."""

    @property
    @abc.abstractmethod
    def batch_size(self) -> Any:
        """The batch size (a scalar, possibly a tensor)."""

    @property
    @abc.abstractmethod
    def sample_ids_shape(self) -> Any:
        """Shape of one entry's sample ids (``TensorShape``)."""

    @property
    @abc.abstractmethod
    def sample_ids_dtype(self) -> Any:
        """dtype of the sample ids."""

    @abc.abstractmethod
    def initialize(self, name: str | None = None) -> tuple[Any, Any]:
        """``(finished, first inputs)``."""

    @abc.abstractmethod
    def sample(self, time: Any, outputs: Any, state: Any, name: str | None = None) -> Any:
        """Sample ids for this step's outputs."""

    @abc.abstractmethod
    def next_inputs(
        self, time: Any, outputs: Any, state: Any, sample_ids: Any, name: str | None = None
    ) -> tuple[Any, Any, Any]:
        """``(finished, next_inputs, next_state)``."""


class CustomHelper(Helper):
    """A helper made of three functions; ``batch_size`` is known after ``initialize``."""

    def __init__(
        self,
        initialize_fn: Callable[[], tuple[Any, Any]],
        sample_fn: Callable[..., Any],
        next_inputs_fn: Callable[..., tuple[Any, Any, Any]],
        sample_ids_shape: Any = None,
        sample_ids_dtype: Any = None,
    ) -> None:
        self._initialize_fn = initialize_fn
        self._sample_fn = sample_fn
        self._next_inputs_fn = next_inputs_fn
        self._batch_size: Any = None
        self._sample_ids_shape = tf.TensorShape(sample_ids_shape or [])
        self._sample_ids_dtype = sample_ids_dtype or tf.int32

    @property
    def batch_size(self) -> Any:
        if self._batch_size is None:
            raise ValueError("batch_size accessed before initialize was called")
        return self._batch_size

    @property
    def sample_ids_shape(self) -> Any:
        return self._sample_ids_shape

    @property
    def sample_ids_dtype(self) -> Any:
        return self._sample_ids_dtype

    def initialize(self, name: str | None = None) -> tuple[Any, Any]:
        with tf.name_scope(name, f"{type(self).__name__}Initialize"):
            finished, next_inputs = self._initialize_fn()
            if self._batch_size is None:
                self._batch_size = tf.size(finished)
        return finished, next_inputs

    def sample(self, time: Any, outputs: Any, state: Any, name: str | None = None) -> Any:
        with tf.name_scope(name, f"{type(self).__name__}Sample", (time, outputs, state)):
            return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(
        self, time: Any, outputs: Any, state: Any, sample_ids: Any, name: str | None = None
    ) -> tuple[Any, Any, Any]:
        with tf.name_scope(name, f"{type(self).__name__}NextInputs", (time, outputs, state)):
            return self._next_inputs_fn(
                time=time, outputs=outputs, state=state, sample_ids=sample_ids
            )


class TrainingHelper(Helper):
    """Teacher forcing: step ``t`` reads ``inputs[:, t]`` (``inputs[t]`` if time-major)."""

    def __init__(
        self, inputs: Any, sequence_length: Any, time_major: bool = False, name: str | None = None
    ) -> None:
        with tf.name_scope(name, "TrainingHelper", [inputs, sequence_length]):
            inputs = tf.convert_to_tensor(inputs, name="inputs")
            self._inputs = inputs
            if not time_major:
                inputs = tf.nest.map_structure(transpose_batch_time, inputs)
            self._input_tas = tf.nest.map_structure(_unstack_ta, inputs)
            self._sequence_length = tf.convert_to_tensor(sequence_length, name="sequence_length")
            if self._sequence_length.get_shape().ndims != 1:
                raise ValueError(
                    "Expected sequence_length to be a vector, but received shape: "
                    f"{self._sequence_length.get_shape()}"
                )
            self._zero_inputs = tf.nest.map_structure(lambda x: tf.zeros_like(x[0, :]), inputs)
            self._batch_size = tf.size(sequence_length)

    @property
    def inputs(self) -> Any:
        return self._inputs

    @property
    def sequence_length(self) -> Any:
        return self._sequence_length

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def sample_ids_shape(self) -> Any:
        return tf.TensorShape([])

    @property
    def sample_ids_dtype(self) -> Any:
        return tf.int32

    def _read(self, time: Any, finished: Any) -> Any:
        return tf.cond(
            tf.reduce_all(finished),
            lambda: self._zero_inputs,
            lambda: tf.nest.map_structure(lambda ta: ta.read(time), self._input_tas),
        )

    def initialize(self, name: str | None = None) -> tuple[Any, Any]:
        with tf.name_scope(name, "TrainingHelperInitialize"):
            finished = tf.equal(0, self._sequence_length)
            return finished, self._read(0, finished)

    def sample(  # type: ignore[override]
        self, time: Any, outputs: Any, name: str | None = None, **unused: Any
    ) -> Any:
        with tf.name_scope(name, "TrainingHelperSample", [time, outputs]):
            return tf.cast(tf.argmax(outputs, axis=-1), tf.int32)

    def next_inputs(  # type: ignore[override]
        self, time: Any, outputs: Any, state: Any, name: str | None = None, **unused: Any
    ) -> tuple[Any, Any, Any]:
        with tf.name_scope(name, "TrainingHelperNextInputs", [time, outputs, state]):
            next_time = time + 1
            finished = next_time >= self._sequence_length
            return finished, self._read(next_time, finished), state


def _scatter_mix(where: Any, picked: Any, where_not: Any, kept: Any, like: Any) -> Any:
    """Rows ``where`` from ``picked``, rows ``where_not`` from ``kept``, shaped like ``like``."""
    shape = tf.shape(like)
    return tf.scatter_nd(indices=where, updates=picked, shape=shape) + tf.scatter_nd(
        indices=where_not, updates=kept, shape=shape
    )


class ScheduledEmbeddingTrainingHelper(TrainingHelper):
    """Teacher forcing, except that each entry feeds its embedded sample with some probability."""

    def __init__(
        self,
        inputs: Any,
        sequence_length: Any,
        embedding: Any,
        sampling_probability: Any,
        time_major: bool = False,
        seed: int | None = None,
        scheduling_seed: int | None = None,
        name: str | None = None,
    ) -> None:
        with tf.name_scope(
            name, "ScheduledEmbeddingSamplingWrapper", [embedding, sampling_probability]
        ):
            self._embedding_fn = _embedding_fn(embedding)
            self._sampling_probability = _check_sampling_probability(sampling_probability)
            self._seed = seed
            self._scheduling_seed = scheduling_seed
            super().__init__(inputs, sequence_length, time_major=time_major, name=name)

    def sample(  # type: ignore[override]
        self, time: Any, outputs: Any, state: Any, name: str | None = None
    ) -> Any:
        with tf.name_scope(name, "ScheduledEmbeddingTrainingHelperSample", [time, outputs, state]):
            select = bernoulli_sample(
                probs=self._sampling_probability,
                dtype=tf.bool,
                sample_shape=self.batch_size,
                seed=self._scheduling_seed,
            )
            return tf.where(
                select,
                categorical_sample(logits=outputs, seed=self._seed),
                tf.fill([self.batch_size], -1),
            )

    def next_inputs(  # type: ignore[override]
        self, time: Any, outputs: Any, state: Any, sample_ids: Any, name: str | None = None
    ) -> tuple[Any, Any, Any]:
        with tf.name_scope(
            name, "ScheduledEmbeddingTrainingHelperNextInputs", [time, outputs, state, sample_ids]
        ):
            finished, base, state = super().next_inputs(time, outputs, state, name=name)

            def maybe_sample() -> Any:
                where = tf.cast(tf.where(sample_ids > -1), tf.int32)
                where_not = tf.cast(tf.where(sample_ids <= -1), tf.int32)
                sampled = self._embedding_fn(tf.gather_nd(sample_ids, where))
                return _scatter_mix(where, sampled, where_not, tf.gather_nd(base, where_not), base)

            next_inputs = tf.cond(tf.reduce_all(finished), lambda: base, maybe_sample)
            return finished, next_inputs, state


class ScheduledOutputTrainingHelper(TrainingHelper):
    """Teacher forcing, except that each entry feeds its own output with some probability."""

    def __init__(
        self,
        inputs: Any,
        sequence_length: Any,
        sampling_probability: Any,
        time_major: bool = False,
        seed: int | None = None,
        next_inputs_fn: Callable[[Any], Any] | None = None,
        auxiliary_inputs: Any = None,
        name: str | None = None,
    ) -> None:
        with tf.name_scope(
            name, "ScheduledOutputTrainingHelper", [inputs, auxiliary_inputs, sampling_probability]
        ):
            self._sampling_probability = _check_sampling_probability(sampling_probability)
            if auxiliary_inputs is None:
                joined = inputs
            else:
                inputs = tf.convert_to_tensor(inputs, name="inputs")
                auxiliary_inputs = tf.convert_to_tensor(auxiliary_inputs, name="auxiliary_inputs")
                joined = tf.nest.map_structure(
                    lambda x, y: tf.concat((x, y), -1), inputs, auxiliary_inputs
                )
                if not time_major:
                    auxiliary_inputs = tf.nest.map_structure(transpose_batch_time, auxiliary_inputs)
            self._auxiliary_input_tas = (
                None
                if auxiliary_inputs is None
                else tf.nest.map_structure(_unstack_ta, auxiliary_inputs)
            )
            self._seed = seed
            self._next_inputs_fn = next_inputs_fn
            super().__init__(joined, sequence_length, time_major=time_major, name=name)

    def sample(  # type: ignore[override]
        self, time: Any, outputs: Any, state: Any, name: str | None = None
    ) -> Any:
        with tf.name_scope(name, "ScheduledOutputTrainingHelperSample", [time, outputs, state]):
            return bernoulli_sample(
                probs=self._sampling_probability, sample_shape=self.batch_size, seed=self._seed
            )

    def _with_auxiliary(self, time: Any, outputs: Any, indices: Any = None) -> Any:
        if self._auxiliary_input_tas is None:
            return outputs
        aux = tf.nest.map_structure(lambda ta: ta.read(time + 1), self._auxiliary_input_tas)
        if indices is not None:
            aux = tf.gather_nd(aux, indices)
        return tf.nest.map_structure(lambda x, y: tf.concat((x, y), -1), outputs, aux)

    def next_inputs(  # type: ignore[override]
        self, time: Any, outputs: Any, state: Any, sample_ids: Any, name: str | None = None
    ) -> tuple[Any, Any, Any]:
        with tf.name_scope(
            name, "ScheduledOutputTrainingHelperNextInputs", [time, outputs, state, sample_ids]
        ):
            finished, base, state = super().next_inputs(time, outputs, state, name=name)
            chosen = tf.cast(sample_ids, tf.bool)

            def maybe_sample() -> Any:
                if self._next_inputs_fn is None:
                    return tf.where(chosen, self._with_auxiliary(time, outputs), base)
                where = tf.cast(tf.where(chosen), tf.int32)
                where_not = tf.cast(tf.where(tf.logical_not(chosen)), tf.int32)
                sampled = self._with_auxiliary(
                    time, self._next_inputs_fn(tf.gather_nd(outputs, where)), where
                )
                return _scatter_mix(where, sampled, where_not, tf.gather_nd(base, where_not), base)

            skip = tf.logical_or(tf.reduce_all(finished), tf.logical_not(tf.reduce_any(chosen)))
            return finished, tf.cond(skip, lambda: base, maybe_sample), state


class GreedyEmbeddingHelper(Helper):
    """Inference: feed back the embedded argmax of each output until ``end_token``."""

    def __init__(self, embedding: Any, start_tokens: Any, end_token: Any) -> None:
        self._embedding_fn = _embedding_fn(embedding)
        self._start_tokens = tf.convert_to_tensor(start_tokens, dtype=tf.int32, name="start_tokens")
        self._end_token = tf.convert_to_tensor(end_token, dtype=tf.int32, name="end_token")
        if self._start_tokens.get_shape().ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._batch_size = tf.size(start_tokens)
        if self._end_token.get_shape().ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._start_inputs = self._embedding_fn(self._start_tokens)

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def sample_ids_shape(self) -> Any:
        return tf.TensorShape([])

    @property
    def sample_ids_dtype(self) -> Any:
        return tf.int32

    def initialize(self, name: str | None = None) -> tuple[Any, Any]:
        return tf.tile([False], [self._batch_size]), self._start_inputs

    def _logits(self, outputs: Any) -> Any:
        if not isinstance(outputs, tf.Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        return outputs

    def sample(self, time: Any, outputs: Any, state: Any, name: str | None = None) -> Any:
        return tf.argmax(self._logits(outputs), axis=-1, output_type=tf.int32)

    def next_inputs(
        self, time: Any, outputs: Any, state: Any, sample_ids: Any, name: str | None = None
    ) -> tuple[Any, Any, Any]:
        finished = tf.equal(sample_ids, self._end_token)
        next_inputs = tf.cond(
            tf.reduce_all(finished),
            lambda: self._start_inputs,
            lambda: self._embedding_fn(sample_ids),
        )
        return finished, next_inputs, state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """Inference: feed back an embedded sample from ``softmax(outputs / temperature)``."""

    def __init__(
        self,
        embedding: Any,
        start_tokens: Any,
        end_token: Any,
        softmax_temperature: Any = None,
        seed: int | None = None,
    ) -> None:
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature = softmax_temperature
        self._seed = seed

    def sample(self, time: Any, outputs: Any, state: Any, name: str | None = None) -> Any:
        logits = self._logits(outputs)
        if self._softmax_temperature is not None:
            logits = logits / self._softmax_temperature
        return categorical_sample(logits=logits, seed=self._seed)


class InferenceHelper(Helper):
    """Inference on outputs that are not ids: the user's sample, end and next-input functions."""

    def __init__(
        self,
        sample_fn: Callable[[Any], Any],
        sample_shape: Any,
        sample_dtype: Any,
        start_inputs: Any,
        end_fn: Callable[[Any], Any],
        next_inputs_fn: Callable[[Any], Any] | None = None,
    ) -> None:
        self._sample_fn = sample_fn
        self._end_fn = end_fn
        self._sample_shape = tf.TensorShape(sample_shape)
        self._sample_dtype = sample_dtype
        self._next_inputs_fn = next_inputs_fn
        self._batch_size = tf.shape(start_inputs)[0]
        self._start_inputs = tf.convert_to_tensor(start_inputs, name="start_inputs")

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def sample_ids_shape(self) -> Any:
        return self._sample_shape

    @property
    def sample_ids_dtype(self) -> Any:
        return self._sample_dtype

    def initialize(self, name: str | None = None) -> tuple[Any, Any]:
        return tf.tile([False], [self._batch_size]), self._start_inputs

    def sample(self, time: Any, outputs: Any, state: Any, name: str | None = None) -> Any:
        return self._sample_fn(outputs)

    def next_inputs(
        self, time: Any, outputs: Any, state: Any, sample_ids: Any, name: str | None = None
    ) -> tuple[Any, Any, Any]:
        nxt = sample_ids if self._next_inputs_fn is None else self._next_inputs_fn(sample_ids)
        return self._end_fn(sample_ids), nxt, state
