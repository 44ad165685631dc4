"""``npu_bridge.tf_adapter``: the names scripts read from the adapter's compiled module.

The real ``tf_adapter`` is the SWIG wrapper of the adapter's C++ library (plugin init, RDMA,
shared memory). Scripts use its TensorFlow data-type constants, e.g.
``npu_plugin.malloc_shared_memory(name, shape, tf_adapter.DT_FLOAT)``; those are TensorFlow's
``DataType`` enum values, provided here. Any other name raises an ``AttributeError`` saying it
is part of the compiled library, which tf2npu does not emulate.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DT_BOOL",
    "DT_DOUBLE",
    "DT_FLOAT",
    "DT_HALF",
    "DT_INT8",
    "DT_INT16",
    "DT_INT32",
    "DT_INT64",
    "DT_STRING",
    "DT_UINT8",
    "DT_UINT16",
    "DT_UINT32",
    "DT_UINT64",
]

# TensorFlow's DataType enum (tensorflow/core/framework/types.proto).
DT_FLOAT = 1
DT_DOUBLE = 2
DT_INT32 = 3
DT_UINT8 = 4
DT_INT16 = 5
DT_INT8 = 6
DT_STRING = 7
DT_INT64 = 9
DT_BOOL = 10
DT_UINT16 = 17
DT_HALF = 19
DT_UINT32 = 22
DT_UINT64 = 23


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"npu_bridge.tf_adapter.{name}: part of the adapter's compiled library, which tf2npu "
        f"does not emulate; it provides the DataType constants {', '.join(__all__)}. Use "
        "npu_bridge.estimator.npu.npu_plugin for initialisation and shared memory"
    )
