"""``DropOutGenMask`` and ``DropOutDoMask``: Ascend's two-op dropout (``npu_ops.dropout``).

The mask is a bit mask, not a tensor of x's shape: one bit per element, least significant bit
first (element ``i`` is bit ``i % 8`` of byte ``i // 8``), kept when set, the byte count rounded
up to a multiple of 16 (128 bits) as on the device. Bits past the element count are 0.

Randomness follows TensorFlow's stateful random ops: with ``seed`` and ``seed2`` both 0 the
mask is nondeterministic; otherwise the sequence of masks a node produces over successive runs
is fixed by the seeds (the same seeds give the same first mask in every session).
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF, DT_INT32, DT_INT64, DT_UINT8
from tf2npu.graph.npu_ops.opdef import ArgDef, AttrDef, NpuOpDef

__all__ = ["DROPOUT_DO_MASK", "DROPOUT_GEN_MASK", "mask_bytes"]

_BLOCK_BITS = 128


def mask_bytes(elements: int) -> int:
    """Bytes of the mask for ``elements`` elements: bits rounded up to 128, divided by 8."""
    return -(-elements // _BLOCK_BITS) * _BLOCK_BITS // 8


def draw_kept(shape: Any, prob: Any, align: int, *, seed: int, seed2: int) -> Any:
    """Keep flags (bool, 1-D) for ``prod(shape)`` elements, padded with False to a multiple of
    ``align``: element ``i`` is kept when its float32 uniform draw is below ``prob``. Shared by
    the bit mask (``DropOutGenMask``) and the byte mask (``DropOutGenMaskV3``)."""
    import tensorflow as tf

    count = tf.reduce_prod(tf.cast(shape, tf.int64))
    padded = (count + align - 1) // align * align
    uniform = tf.raw_ops.RandomUniform(
        shape=tf.reshape(padded, [1]), dtype=tf.float32, seed=seed, seed2=seed2
    )
    return tf.logical_and(uniform < tf.cast(prob, tf.float32), tf.range(padded) < count)


def _gen_mask(shape: Any, prob: Any, *, seed: int, seed2: int) -> Any:
    import tensorflow as tf

    kept = draw_kept(shape, prob, _BLOCK_BITS, seed=seed, seed2=seed2)
    bits = tf.reshape(tf.cast(kept, tf.int32), [-1, 8])
    weights = tf.constant([1, 2, 4, 8, 16, 32, 64, 128], tf.int32)
    return tf.cast(tf.reduce_sum(bits * weights, axis=1), tf.uint8)


def _do_mask(x: Any, mask: Any, keep_prob: Any) -> Any:
    import tensorflow as tf

    shifts = tf.constant([0, 1, 2, 3, 4, 5, 6, 7], tf.uint8)
    bits = tf.bitwise.bitwise_and(tf.bitwise.right_shift(mask[:, None], shifts), 1)
    bits = tf.reshape(bits, [-1])[: tf.size(x)]
    return x * tf.cast(tf.reshape(bits, tf.shape(x)), x.dtype) / keep_prob


GEN_MASK_INPUTS = (
    ArgDef("shape", "the shape of the tensor to drop out (1-D)", type_attr="Tshape"),
    ArgDef("prob", "the keep probability (scalar)"),
)
GEN_MASK_ATTRS = (
    AttrDef("seed", "int", 0, "op-level seed; with seed2 = 0 too, nondeterministic"),
    AttrDef("seed2", "int", 0, "second seed (graph-level seed, as TF's get_seed)"),
    AttrDef("Tshape", "type", DT_INT32, "dtype of the shape input",
            allowed=(DT_INT32, DT_INT64)),
)  # fmt: skip
GEN_MASK_EXACTNESS = (
    "statistically equivalent, not bit-identical to the device (a different generator: "
    "TF's Philox RandomUniform, float32 uniforms compared with prob)"
)
"""What both mask generators (bit and byte mask) share: inputs, attrs, how exact they are."""

DROPOUT_GEN_MASK = NpuOpDef(
    name="DropOutGenMask",
    summary="Random keep-mask for dropout, packed one bit per element.",
    math=(
        "bit i = (u_i < prob) for i < prod(shape), u_i ~ U[0, 1); "
        "output length = ceil(prod(shape) / 128) · 16 bytes"
    ),
    inputs=GEN_MASK_INPUTS,
    outputs=(ArgDef("y", "the packed mask (1-D uint8)", type_attr="", dtype=DT_UINT8),),
    dtypes=(DT_FLOAT, DT_HALF),
    attrs=GEN_MASK_ATTRS,
    body=_gen_mask,
    exactness=GEN_MASK_EXACTNESS,
)

DROPOUT_DO_MASK = NpuOpDef(
    name="DropOutDoMask",
    summary="Apply a DropOutGenMask mask: keep and rescale, or zero.",
    math="y_i = x_i · bit_i / keep_prob",
    inputs=(
        ArgDef("x", "the tensor to drop out"),
        ArgDef("mask", "the packed mask from DropOutGenMask", type_attr="", dtype=DT_UINT8),
        ArgDef("keep_prob", "the keep probability (scalar, x's dtype)"),
    ),
    outputs=(ArgDef("y", "x with dropped elements zeroed and kept ones scaled"),),
    dtypes=(DT_FLOAT, DT_HALF),
    body=_do_mask,
    exactness="exact: x·1/keep_prob or 0 in x's dtype (keep_prob = 1 gives x bit for bit)",
)
