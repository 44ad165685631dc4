"""NPU ops: ops that exist on Ascend but not in TensorFlow, with CPU implementations.

Converted scripts and fusion rules put these op types into graphs (``Gelu`` from
``npu_unary_ops.gelu``, ``DropOutGenMask``/``DropOutDoMask`` from ``npu_ops.dropout``,
``BasicLSTMCell`` and ``LarsV2`` from ``npu_ops``, ``DynamicRnn``/``DynamicGruV2``/
``DynamicAUGRU`` from the ``npu_dynamic_rnn`` layers, fused ``LayerNorm`` and
``AdamApplyOne*``). :data:`NPU_OPS` describes each; :func:`add_npu_node`
builds checked nodes; :func:`materialize` makes them runnable by stock TensorFlow on the CPU.
Scripts emit them through the TF client (:mod:`tf2npu.client.ops`) as calls stock TensorFlow
runs; :func:`recognize` turns those calls back into NPU-op nodes for the engine. See
``docs/npu-ops.md``.
"""

from tf2npu.graph.npu_ops.catalogue import NPU_OPS
from tf2npu.graph.npu_ops.materialize import FUNCTION_SUFFIX, function_name, materialize
from tf2npu.graph.npu_ops.nodes import (
    NPU_ATTRS_META,
    NPU_OP_META,
    add_npu_node,
    is_npu_op,
    npu_layout,
    op_def_of,
    output_dtypes,
)
from tf2npu.graph.npu_ops.opdef import ArgDef, AttrDef, NpuOpDef
from tf2npu.graph.npu_ops.recognize import recognize

__all__ = [
    "FUNCTION_SUFFIX",
    "NPU_ATTRS_META",
    "NPU_OPS",
    "NPU_OP_META",
    "ArgDef",
    "AttrDef",
    "NpuOpDef",
    "add_npu_node",
    "function_name",
    "is_npu_op",
    "materialize",
    "npu_layout",
    "op_def_of",
    "output_dtypes",
    "recognize",
]
