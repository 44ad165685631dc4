"""``dump_data=stats`` inside the run: each float tensor's statistics are reductions in the
executed graph, so a dumped step hands Python eight numbers per tensor instead of the tensor.

Fetching the tensors made TensorFlow keep every one of them alive to the end of the run and
copy them out (702 MB a step on ``benchmarks/dump_overhead.py``'s model), and the statistics
then took numpy five more passes over each. Here each reduction reads the tensor right after
its producer wrote it, while it is still in cache, and the tensor is freed as soon as its own
readers are done.

A finite tensor (the common case) takes five passes on its own dtype: max, min, sum, sum of
squares (``L2Loss``, no temporary) and the zero count. NaN or Inf anywhere makes the sum of
squares non-finite; only then a ``cond`` branch counts them and recomputes the four figures
over the finite elements in float64. float16 and bfloat16 are reduced in float32 (exact for
max, min and the counts). The figures leave the run as one float64 vector per tensor (max, min,
sum, sum of squares, NaN, -Inf, +Inf and zero counts), packed into one fetch per run;
:func:`tf2npu.artifacts.dump.stats_from_sums` makes the row. Sums accumulate in the tensor's
dtype (Eigen's tree reduction), so mean and L2 norm equal the float64 figures of the numpy path
(:func:`tf2npu.artifacts.dump.tensor_stats`) within float32 rounding of the sums; max, min and
the counts are exact, but for subnormals: TensorFlow's threads treat denormal inputs as zero,
so a subnormal counts as a zero and is never the max or min.

Where the statistics op is built (:mod:`tf2npu.runtime.dump.stats_op`, ``make venv``), one call
of it replaces the function: the same eight numbers in one pass over the tensor, sums in float
lanes combined in double every 32 elements a lane (closer to the float64 figures than the
float32 reductions), max, min and the counts exact, subnormals included, the non-finite case per
block of 32K elements in double. :func:`method` decides, once per process, and says which one
measured.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts.dump import TensorStats

__all__ = [
    "SUMS", "Method", "StatsPlan", "figures", "measurable", "method", "pack", "row_of",
    "same_values",
]  # fmt: skip
_LOG = logging.getLogger("tf2npu.runtime")

SUMS = 7
"""max, min, sum, half the sum of squares (over the finite elements); NaN, -Inf, +Inf counts."""
_SCOPE = "_tf2npu_stats"


def measurable(tensor: Any) -> bool:
    """Whether the run measures ``tensor`` itself (a float tensor); others are fetched."""
    return bool(tensor.dtype.base_dtype.is_floating)


@dataclass(frozen=True)
class Method:
    """How a stats dump measures float tensors: the statistics op, or TensorFlow's reductions
    (``op`` None) and why."""

    op: Any
    why_not: str = ""

    @property
    def label(self) -> str:
        """What the run summary says measured (``dumps[].statistics``)."""
        if self.op is not None:
            return "tensor_stats op (one pass)"
        return f"TensorFlow reductions (five passes): {self.why_not}"


REDUCTIONS = Method(None, "chosen by the caller")
"""TensorFlow's reductions whatever is built (the tests compare both paths)."""


@functools.cache
def method() -> Method:
    """The one decision, made when the process plans its first stats dump: the statistics op
    when it loads, else TensorFlow's reductions, with one warning saying why."""
    from tf2npu.runtime.dump import stats_op

    loaded = stats_op.load()
    if loaded.op is None:
        _LOG.warning(
            "tf2npu: dump_data=stats measures with TensorFlow's reductions (five passes a "
            "tensor, slower): %s", loaded.why_not,
        )  # fmt: skip
    return Method(loaded.op, loaded.why_not)


def figures(tensor: Any, how: Method | None = None) -> tuple[Any, Any]:
    """The figures of ``tensor`` as ops of its graph: a ``[SUMS]`` float64 vector (max, min,
    sum, half the sum of squares over the finite elements; NaN, -Inf, +Inf counts) and the
    int32 zero count, measured as ``how`` says (:func:`method` when None).

    One op call per tensor, named ``<producer>/_tf2npu_stats_<output index>``, reading nothing
    else, so it runs as soon as the tensor exists: the statistics op, or a function call (one
    function per dtype) that TensorFlow inlines and whose ``cond`` it lowers to a
    ``Switch``/``Merge`` pair when the session compiles the graph, in C++: building the ~25 ops
    of each tensor from Python took 15 s for the 400 tensors of a small BERT, and ``tf.cond``
    calls under control flow v2 another 25 s.
    """
    import tensorflow as tf

    how = how or method()
    graph = tensor.graph
    name = f"{tensor.op.name}/{_SCOPE}_{tensor.value_index}"
    with graph.as_default(), tf.control_dependencies(None):
        if how.op is not None:
            sums, zero = how.op(tensor, name=name)
            return sums, zero
        flat = tf.reshape(tensor, [-1], name=name)
        sums, zero = _function(tensor.dtype.base_dtype)(flat)
        return sums, zero


@functools.cache
def _function(dtype: Any) -> Any:
    """The traced statistics function of a flat ``dtype`` tensor."""
    import tensorflow as tf

    def measure(flat: Any) -> tuple[Any, Any]:
        if flat.dtype in (tf.float16, tf.bfloat16):
            flat = tf.cast(flat, tf.float32)
        half_squares = tf.nn.l2_loss(flat)
        sums = tf.stack(
            [tf.reduce_max(flat), tf.reduce_min(flat), tf.reduce_sum(flat), half_squares]
        )
        zero = tf.reduce_sum(tf.cast(tf.equal(flat, 0), tf.int32))
        # A v1 cond written out: tf.cond's lowering gives the Merge a control input, and
        # grappler then warns once per function instantiation that it skips the loop pass.
        finite = tf.math.is_finite(half_squares)
        _, sums_if_finite = tf.raw_ops.Switch(data=sums, pred=finite)
        flat_if_not, _ = tf.raw_ops.Switch(data=flat, pred=finite)
        fast = tf.concat([tf.cast(sums_if_finite, tf.float64), tf.zeros([3], tf.float64)], 0)
        merged, _ = tf.raw_ops.Merge(inputs=[_non_finite(tf, flat_if_not), fast])
        return merged, zero

    spec = tf.TensorSpec([None], dtype)
    return tf.function(
        measure, autograph=False, experimental_attributes={"_noinline": True}
    ).get_concrete_function(spec)


def _non_finite(tf: Any, flat: Any) -> Any:
    """The figures of a tensor holding NaN or Inf (or whose squares overflowed): over its
    finite elements, in float64, and the three counts. Every op reads ``flat``, the switch's
    dead output when the tensor is finite, so then none of them runs."""
    wide = tf.cast(flat, tf.float64)
    finite = tf.math.is_finite(wide)
    zeros = tf.zeros_like(wide)
    inf = zeros + np.inf

    def count(mask: Any) -> Any:
        return tf.reduce_sum(tf.cast(mask, tf.float64))

    kept = tf.where(finite, wide, zeros)
    return tf.stack(
        [
            tf.reduce_max(tf.where(finite, wide, -inf)),
            tf.reduce_min(tf.where(finite, wide, inf)),
            tf.reduce_sum(kept),
            tf.nn.l2_loss(kept),
            count(tf.math.is_nan(wide)),
            count(tf.equal(wide, -inf)),
            count(tf.equal(wide, inf)),
        ]
    )


_SAME_VALUES = frozenset(
    {"Identity", "Snapshot", "StopGradient", "PreventGradient", "Reshape", "Squeeze",
     "ExpandDims", "Transpose"}
)  # fmt: skip
"""Ops whose output holds the elements of their first input, in another shape or order."""


def same_values(tensor: Any, planned: set[str]) -> Any:
    """The tensor among ``planned`` whose elements ``tensor`` holds (itself if none): the
    output of a reshape, transpose or identity of a dumped tensor is measured once (max, min
    and the counts are the same; a transpose sums in another order, within float32 rounding).
    A third of the bytes of a BERT training step's outputs are such tensors."""
    while tensor.op.type in _SAME_VALUES and tensor.op.inputs:
        source = tensor.op.inputs[0]
        if source.name not in planned or source.dtype != tensor.dtype:
            break
        tensor = source
    return tensor


def pack(measured: Sequence[tuple[Any, Any]]) -> tuple[Any, Any]:
    """Several tensors' :func:`figures` as two fetches: ``[n, SUMS]`` float64, ``[n]`` int32."""
    import tensorflow as tf

    graph = measured[0][0].graph
    with graph.as_default(), tf.control_dependencies(None), tf.name_scope("tf2npu_dump/"):
        return (
            tf.stack([sums for sums, _ in measured], name=_SCOPE),
            tf.stack([zero for _, zero in measured], name=f"{_SCOPE}_zero"),
        )


def row_of(tensor: Any, shape: tuple[int, ...], sums: Sequence[float], zero: int) -> TensorStats:
    """The statistics row of ``tensor`` (of ``shape`` in this run) from its figures."""
    dtype = tensor.dtype.base_dtype
    count = int(np.prod(shape, dtype=np.int64))
    top, bottom, total, half_squares, nan, neg_inf, pos_inf = sums
    return dumpfile.stats_from_sums(
        "output", 0, size=count * dtype.size, dtype=dumpfile.ge_dtype(dtype.as_numpy_dtype),
        shape=shape, count=count, sums=(top, bottom, total, 2 * half_squares),
        non_finite=(int(nan), int(neg_inf), int(pos_inf)), zero=int(zero),
    )  # fmt: skip


@dataclass(frozen=True)
class StatsPlan:
    """What a stats dump fetches for a run's distinct dumped tensors, and how the fetched values
    become, per tensor, its statistics row (or the tensor itself, which the writer measures:
    integers, bools and complex numbers, small in practice) and its shape."""

    tensors: tuple[Any, ...]
    fetches: tuple[Any, ...]
    """The packed figures (two tensors, when any tensor is measured), the tensors fetched
    whole, then the shapes the graph does not know statically."""
    measured: tuple[int, ...]
    """Positions (in ``tensors``) of the measured tensors, in the packed figures' order."""
    whole: tuple[int, ...]
    dynamic: tuple[int, ...]
    statistics: str = ""
    """What measured the float tensors (:attr:`Method.label`); "" when none is measured."""

    @classmethod
    def of(
        cls, tensors: Sequence[Any], made: dict[str, Any], how: Method | None = None
    ) -> StatsPlan:
        """The plan for ``tensors``, measured as ``how`` says (:func:`method` when None);
        ``made`` caches each tensor's figures by name, so a signature planned again (its graph
        grew) adds no second copy of them to the graph."""
        import tensorflow as tf

        measured = tuple(i for i, t in enumerate(tensors) if measurable(t))
        whole = tuple(i for i, t in enumerate(tensors) if not measurable(t))
        dynamic = tuple(i for i, t in enumerate(tensors) if not t.shape.is_fully_defined())
        fetches: list[Any] = []
        statistics = ""
        if measured:
            how = how or method()
            statistics = how.label
            planned = {t.name for t in tensors}
            sources = [same_values(tensors[i], planned) for i in measured]
            for source in sources:
                if source.name not in made:
                    made[source.name] = figures(source, how)
            fetches += pack([made[source.name] for source in sources])
        fetches += [tensors[i] for i in whole]
        for i in dynamic:
            with tensors[i].graph.as_default(), tf.control_dependencies(None):
                fetches.append(tf.shape(tensors[i], out_type=tf.int64))
        return cls(tuple(tensors), tuple(fetches), measured, whole, dynamic, statistics)

    def decode(
        self, values: Sequence[Any]
    ) -> tuple[list[TensorStats | np.ndarray[Any, Any]], list[tuple[int, ...]]]:
        """Per tensor, its row (or its value, for the writer to measure) and its shape."""
        shapes: list[tuple[int, ...]] = [
            tuple(t.shape.as_list()) if t.shape.is_fully_defined() else () for t in self.tensors
        ]
        at = 2 if self.measured else 0
        whole = values[at : at + len(self.whole)]
        for i, shape in zip(self.dynamic, values[at + len(self.whole) :], strict=True):
            shapes[i] = tuple(int(d) for d in shape)
        out: list[TensorStats | np.ndarray[Any, Any]] = [None] * len(self.tensors)  # type: ignore[list-item]
        for i, value in zip(self.whole, whole, strict=True):
            out[i] = np.asarray(value)
            shapes[i] = tuple(out[i].shape)
        if self.measured:
            sums, zeros = values[0].tolist(), values[1].tolist()
            for i, row, zero in zip(self.measured, sums, zeros, strict=True):
                out[i] = row_of(self.tensors[i], shapes[i], row, zero)
        return out, shapes
