"""Scopes that mark the ops created inside them with private node attributes.

Like the Ascend TF Adapter, every attribute scope uses ``Graph._attr_scope``: it only adds an
``AttrValue`` to each op built in the scope of the default graph; tf2npu's graph engine reads
the marks (``_without_npu_compile`` in placement, ``_keep_dtype`` in precision). Attribute
names, value kinds and values are those of the latest adapter (``keep_dtype_scope`` writes
``i=1``; the anchor wrote ``b=True``, which the engine reads the same way). Two scopes are name
scopes, as in the real module: :func:`npu_recompute_scope` and :func:`npu_graph_slice_scope`.

Example:
    >>> import tensorflow as tf
    >>> with tf.Graph().as_default():
    ...     with without_npu_compile_scope():
    ...         op = tf.constant(1.0).op
    >>> op.get_attr("_without_npu_compile")
    True
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import tensorflow as tf
from tensorflow.core.framework.attr_value_pb2 import AttrValue

from npu_bridge.estimator.npu.npu_config import NpuExecutePlacement, check_positive_integer

__all__ = [
    "disable_autofuse",
    "keep_dtype_scope",
    "limit_core_num_scope",
    "npu_graph_slice_scope",
    "npu_mem_type_scope",
    "npu_optimizer_scope",
    "npu_qos_label_scope",
    "npu_recompute_scope",
    "npu_stage_scope",
    "npu_variable_scope",
    "npu_weight_prefetch_scope",
    "op_specified_engine_scope",
    "subgraph_multi_dims_scope",
    "without_npu_compile_scope",
]


@contextlib.contextmanager
def _attr_scope(attrs: Mapping[str, Any]) -> Iterator[None]:
    graph = tf.compat.v1.get_default_graph()
    with graph._attr_scope(dict(attrs)):
        yield


def _int(scope: str, name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{scope}({name}={value!r}): {name} is {type(value).__name__}; give an int")
    return value


def _text(scope: str, name: str, value: object) -> bytes:
    if not isinstance(value, str | bytes):
        raise TypeError(
            f"{scope}({name}={value!r}): {name} is {type(value).__name__}; give a string"
        )
    return value.encode("utf-8") if isinstance(value, str) else value


def without_npu_compile_scope() -> contextlib.AbstractContextManager[None]:
    """Keep the ops inside on the host (``_without_npu_compile`` = ``b: true``).

    The engine honours it in mixed compute (``mix_compile_mode=True``), as the anchor adapter.
    """
    return _attr_scope({"_without_npu_compile": AttrValue(b=True)})


def npu_variable_scope(
    placement: NpuExecutePlacement = NpuExecutePlacement.ALL,
) -> contextlib.AbstractContextManager[None]:
    """Placement hint for the ops inside (``_variable_placement`` = ``placement.value``)."""
    if not isinstance(placement, NpuExecutePlacement):
        valid = ", ".join(f"NpuExecutePlacement.{p.name}" for p in NpuExecutePlacement)
        raise ValueError(f"npu_variable_scope(placement={placement!r}): use one of {valid}")
    return _attr_scope({"_variable_placement": AttrValue(s=placement.value.encode())})


def keep_dtype_scope() -> contextlib.AbstractContextManager[None]:
    """Keep the original dtype of the ops inside under mixed precision (``_keep_dtype`` = 1)."""
    return _attr_scope({"_keep_dtype": AttrValue(i=1)})


def npu_stage_scope(stage: int) -> contextlib.AbstractContextManager[None]:
    """Put the ops inside into pipeline stage ``stage`` (``_stage_level``)."""
    return _attr_scope({"_stage_level": AttrValue(i=_int("npu_stage_scope", "stage", stage))})


def npu_mem_type_scope() -> contextlib.AbstractContextManager[None]:
    """Mark the outputs of the ops inside for a special memory type (``_output_memory_type``)."""
    return _attr_scope({"_output_memory_type": AttrValue(i=1)})


def npu_weight_prefetch_scope(
    buffer_pool_id: int = 0, buffer_pool_size: int = 536870912
) -> contextlib.AbstractContextManager[None]:
    """Let prefetch ops inside use buffer pool ``buffer_pool_id`` of ``buffer_pool_size`` bytes."""
    scope = "npu_weight_prefetch_scope"
    return _attr_scope(
        {
            "_buffer_pool_id": AttrValue(i=_int(scope, "buffer_pool_id", buffer_pool_id)),
            "_buffer_pool_size": AttrValue(i=_int(scope, "buffer_pool_size", buffer_pool_size)),
        }
    )


def op_specified_engine_scope(
    engine_name: str, kernel_lib_name: str
) -> contextlib.AbstractContextManager[None]:
    """Request an engine and kernel library for the ops inside."""
    scope = "op_specified_engine_scope"
    return _attr_scope(
        {
            "_specified_engine_name": AttrValue(s=_text(scope, "engine_name", engine_name)),
            "_specified_kernel_lib_name": AttrValue(
                s=_text(scope, "kernel_lib_name", kernel_lib_name)
            ),
        }
    )


def npu_qos_label_scope(label: int) -> contextlib.AbstractContextManager[None]:
    """Quality-of-service label for the ops inside (``_qos_service_label``)."""
    return _attr_scope(
        {"_qos_service_label": AttrValue(i=_int("npu_qos_label_scope", "label", label))}
    )


def subgraph_multi_dims_scope(index: int) -> contextlib.AbstractContextManager[None]:
    """Multi-dims subgraph index for the ops inside (``_subgraph_multi_dims_index``)."""
    return _attr_scope(
        {
            "_subgraph_multi_dims_index": AttrValue(
                i=_int("subgraph_multi_dims_scope", "index", index)
            )
        }
    )


def npu_optimizer_scope() -> contextlib.AbstractContextManager[None]:
    """Mark the ops inside as optimizer ops (``_optimizer`` = ``b: true``)."""
    return _attr_scope({"_optimizer": AttrValue(b=True)})


def disable_autofuse() -> contextlib.AbstractContextManager[None]:
    """Exclude the ops inside from automatic fusion (``_disable_autofuse_scope``)."""
    return _attr_scope({"_disable_autofuse_scope": AttrValue(b=True)})


def limit_core_num_scope(
    op_aicore_num: str = "0", op_vectorore_num: str = "0"
) -> contextlib.AbstractContextManager[None]:
    """Cap the vector cores of auto-fused ops inside (``_op_vectorcore_num``, a string).

    The parameter names are the real ones (``op_vectorore_num`` is spelt so upstream);
    ``op_aicore_num`` is accepted and, as upstream, not written.
    """
    scope = f"limit_core_num_scope(op_vectorore_num={op_vectorore_num!r})"
    if not isinstance(op_vectorore_num, str):
        raise ValueError(f"{scope}: give the core count as a string, e.g. '8'")
    try:
        count = int(op_vectorore_num)
    except ValueError:
        raise ValueError(f"{scope}: not a whole number; give e.g. '8'") from None
    if count <= 0:
        raise ValueError(f"{scope}: the core count must be greater than zero")
    return _attr_scope({"_op_vectorcore_num": AttrValue(s=op_vectorore_num.encode())})


def npu_recompute_scope() -> Any:
    """A name scope ``NpuRecompute``: ops inside are recomputed in the backward pass on device."""
    return tf.name_scope("NpuRecompute")


def npu_graph_slice_scope(slice_num: int | None = None) -> Any:
    """A name scope ``SliceNum-<n>-NpuGraphSlicing<n>`` marking a graph slice."""
    if slice_num is not None:
        check_positive_integer(slice_num, "slice_num", "npu_graph_slice_scope(...)")
    return tf.name_scope(f"SliceNum-{slice_num}-NpuGraphSlicing{slice_num}")
