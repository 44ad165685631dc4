"""``get_gen_ops()``: the adapter's handle on its generated op wrappers.

In the adapter it returns the op library loaded from ``_tf_adapter.so`` (one Python wrapper
per custom op: ``gelu``, ``drop_out_gen_mask``, ``npu_init``, ...). tf2npu has no op library;
the object returned here resolves each wrapper name, on first use, to tf2npu's implementation:
the op library object :data:`npu_bridge.estimator.npu_unary_ops.npu_unary_ops` (``gelu``,
``gelu_grad``, ``drop_out_gen_mask``, ``drop_out_do_mask``), the AI-Core one
:data:`npu_bridge.estimator.npu_aicore_ops.npu_aicore_ops` (``fast_gelu``, ``fast_gelu_grad``,
``drop_out_gen_mask_v3``, ``drop_out_do_mask_v3``) or, for the system ops,
:mod:`npu_bridge.estimator.npu_ops` (``npu_init`` → ``NPUInit``, ``npu_shutdown`` →
``NPUShutdown``). A name with no CPU implementation raises ``AttributeError`` naming the op.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["get_gen_ops"]

#: Generated wrapper name -> function of :mod:`npu_bridge.estimator.npu_ops` building that op.
_SYSTEM_OPS = {"npu_init": "NPUInit", "npu_shutdown": "NPUShutdown"}
#: (module, attribute) of tf2npu's op-library objects, searched in order.
_LIBRARIES = (
    ("npu_bridge.estimator.npu_unary_ops", "npu_unary_ops"),
    ("npu_bridge.estimator.npu_aicore_ops", "npu_aicore_ops"),
)


class _GenOps:
    """Resolves generated-wrapper names to tf2npu's CPU implementations."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _SYSTEM_OPS:
            npu_ops = importlib.import_module("npu_bridge.estimator.npu_ops")
            return getattr(npu_ops, _SYSTEM_OPS[name])
        libraries = [getattr(importlib.import_module(m), a) for m, a in _LIBRARIES]
        for library in libraries:
            if name in dir(type(library)):
                return getattr(library, name)
        provided = sorted(
            [
                *_SYSTEM_OPS,
                *(n for lib in libraries for n in dir(type(lib)) if not n.startswith("_")),
            ]
        )
        raise AttributeError(
            f"get_gen_ops().{name}: the NPU op wrapper {name!r} has no CPU implementation "
            f"in tf2npu; available: {', '.join(provided)}"
        )

    def __repr__(self) -> str:
        return "<tf2npu NPU op wrappers (npu_unary_ops, npu_aicore_ops, npu_ops system ops)>"


_GEN_OPS = _GenOps()


def get_gen_ops() -> Any:
    """The object exposing the generated NPU op wrappers (one per process)."""
    return _GEN_OPS
