"""``DropOutGenMaskV3`` and ``DropOutDoMaskV3``: the byte-mask dropout (``dropout_v3``).

Unlike ``DropOutGenMask`` (one bit per element), the V3 mask holds one uint8 per element, 1
kept and 0 dropped, its length rounded up to a multiple of 16 as on the device (the padding
bytes are 0). ``DropOutDoMaskV3`` keeps and rescales the elements whose byte is 1.

Randomness follows TensorFlow's stateful random ops, as for ``DropOutGenMask``: seeds (0, 0)
are nondeterministic, other seeds fix the sequence of masks a node draws.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF, DT_UINT8
from tf2npu.graph.npu_ops.dropout import (
    GEN_MASK_ATTRS,
    GEN_MASK_EXACTNESS,
    GEN_MASK_INPUTS,
    draw_kept,
)
from tf2npu.graph.npu_ops.opdef import ArgDef, NpuOpDef

__all__ = ["DROPOUT_DO_MASK_V3", "DROPOUT_GEN_MASK_V3", "mask_v3_bytes"]

_ALIGN = 16


def mask_v3_bytes(elements: int) -> int:
    """Bytes of the V3 mask for ``elements`` elements: one each, rounded up to 16."""
    return -(-elements // _ALIGN) * _ALIGN


def _gen_mask_v3(shape: Any, prob: Any, *, seed: int, seed2: int) -> Any:
    import tensorflow as tf

    return tf.cast(draw_kept(shape, prob, _ALIGN, seed=seed, seed2=seed2), tf.uint8)


def _do_mask_v3(x: Any, mask: Any, keep_prob: Any) -> Any:
    import tensorflow as tf

    kept = tf.reshape(mask[: tf.size(x)], tf.shape(x))
    return x * tf.cast(kept, x.dtype) / keep_prob


DROPOUT_GEN_MASK_V3 = NpuOpDef(
    name="DropOutGenMaskV3",
    summary="Random keep-mask for dropout_v3, one uint8 (0 or 1) per element.",
    math=(
        "y_i = (u_i < prob) for i < prod(shape), u_i ~ U[0, 1), else 0; "
        "output length = ceil(prod(shape) / 16) · 16 bytes"
    ),
    inputs=GEN_MASK_INPUTS,
    outputs=(ArgDef("y", "the byte mask (1-D uint8)", type_attr="", dtype=DT_UINT8),),
    dtypes=(DT_FLOAT, DT_HALF),
    attrs=GEN_MASK_ATTRS,
    body=_gen_mask_v3,
    exactness=GEN_MASK_EXACTNESS,
)

DROPOUT_DO_MASK_V3 = NpuOpDef(
    name="DropOutDoMaskV3",
    summary="Apply a DropOutGenMaskV3 mask: keep and rescale, or zero.",
    math="y_i = x_i · mask_i / keep_prob",
    inputs=(
        ArgDef("x", "the tensor to drop out"),
        ArgDef("mask", "the byte mask from DropOutGenMaskV3", type_attr="", dtype=DT_UINT8),
        ArgDef("keep_prob", "the keep probability (scalar, x's dtype)"),
    ),
    outputs=(ArgDef("y", "x with dropped elements zeroed and kept ones scaled"),),
    dtypes=(DT_FLOAT, DT_HALF),
    body=_do_mask_v3,
    exactness="exact: x·1/keep_prob or 0 in x's dtype (keep_prob = 1 gives x bit for bit)",
)
