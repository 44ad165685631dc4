"""The catalogue: every NPU op tf2npu knows, by op type."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from tf2npu.graph.npu_ops.adam import ADAM_APPLY_ONE, ADAM_APPLY_ONE_WITH_DECAY
from tf2npu.graph.npu_ops.dropout import DROPOUT_DO_MASK, DROPOUT_GEN_MASK
from tf2npu.graph.npu_ops.dropout_v3 import DROPOUT_DO_MASK_V3, DROPOUT_GEN_MASK_V3
from tf2npu.graph.npu_ops.fast_gelu import FAST_GELU, FAST_GELU_GRAD
from tf2npu.graph.npu_ops.gelu import GELU, GELU_GRAD
from tf2npu.graph.npu_ops.gru import DYNAMIC_AUGRU, DYNAMIC_GRU_V2
from tf2npu.graph.npu_ops.hcom import HCOM_OPS
from tf2npu.graph.npu_ops.lars import LARS_V2
from tf2npu.graph.npu_ops.layer_norm import LAYER_NORM, LAYER_NORM_GRAD
from tf2npu.graph.npu_ops.lstm import BASIC_LSTM_CELL, DYNAMIC_RNN
from tf2npu.graph.npu_ops.opdef import NpuOpDef

__all__ = ["NPU_OPS"]

NPU_OPS: Mapping[str, NpuOpDef] = MappingProxyType(
    {
        op.name: op
        for op in (
            GELU,
            GELU_GRAD,
            DROPOUT_GEN_MASK,
            DROPOUT_DO_MASK,
            LAYER_NORM,
            LAYER_NORM_GRAD,
            ADAM_APPLY_ONE,
            ADAM_APPLY_ONE_WITH_DECAY,
            BASIC_LSTM_CELL,
            DYNAMIC_RNN,
            DYNAMIC_GRU_V2,
            DYNAMIC_AUGRU,
            LARS_V2,
            FAST_GELU,
            FAST_GELU_GRAD,
            DROPOUT_GEN_MASK_V3,
            DROPOUT_DO_MASK_V3,
            *HCOM_OPS,
        )
    }
)
"""Op type -> definition (inputs, outputs, attrs, math, CPU body)."""
