"""npu_scope: each scope sets exactly its private attrs on ops created inside, and no others."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.core.framework.attr_value_pb2 import AttrValue  # noqa: E402

from npu_bridge.estimator.npu import npu_scope  # noqa: E402
from npu_bridge.estimator.npu.npu_config import NpuExecutePlacement  # noqa: E402

pytestmark = pytest.mark.tf


def _private_attrs(node_def) -> dict[str, AttrValue]:
    return {k: v for k, v in node_def.attr.items() if k.startswith("_")}


def _attrs_inside(scope) -> tuple[dict[str, AttrValue], dict[str, AttrValue]]:
    """Private attrs of an op built inside ``scope`` and of one built after it."""
    with tf.Graph().as_default():
        with scope:
            inside = tf.add(tf.constant(1.0), 2.0, name="inside")
        outside = tf.constant(3.0, name="outside")
        return _private_attrs(inside.op.node_def), _private_attrs(outside.op.node_def)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (npu_scope.without_npu_compile_scope, {"_without_npu_compile": AttrValue(b=True)}),
        (npu_scope.keep_dtype_scope, {"_keep_dtype": AttrValue(i=1)}),
        (npu_scope.npu_variable_scope, {"_variable_placement": AttrValue(s=b"all")}),
        (
            lambda: npu_scope.npu_variable_scope(NpuExecutePlacement.HOST),
            {"_variable_placement": AttrValue(s=b"host")},
        ),
        (lambda: npu_scope.npu_stage_scope(3), {"_stage_level": AttrValue(i=3)}),
        (npu_scope.npu_mem_type_scope, {"_output_memory_type": AttrValue(i=1)}),
        (
            npu_scope.npu_weight_prefetch_scope,
            {"_buffer_pool_id": AttrValue(i=0), "_buffer_pool_size": AttrValue(i=536870912)},
        ),
        (
            lambda: npu_scope.npu_weight_prefetch_scope(2, 1024),
            {"_buffer_pool_id": AttrValue(i=2), "_buffer_pool_size": AttrValue(i=1024)},
        ),
        (
            lambda: npu_scope.op_specified_engine_scope("DNN_VM_AICPU", "aicpu_kernel"),
            {
                "_specified_engine_name": AttrValue(s=b"DNN_VM_AICPU"),
                "_specified_kernel_lib_name": AttrValue(s=b"aicpu_kernel"),
            },
        ),
        (lambda: npu_scope.npu_qos_label_scope(7), {"_qos_service_label": AttrValue(i=7)}),
        (
            lambda: npu_scope.subgraph_multi_dims_scope(1),
            {"_subgraph_multi_dims_index": AttrValue(i=1)},
        ),
        (npu_scope.npu_optimizer_scope, {"_optimizer": AttrValue(b=True)}),
        (npu_scope.disable_autofuse, {"_disable_autofuse_scope": AttrValue(b=True)}),
        (
            lambda: npu_scope.limit_core_num_scope(op_vectorore_num="8"),
            {"_op_vectorcore_num": AttrValue(s=b"8")},
        ),
    ],
)
def test_scope_sets_exactly_its_attrs(make, expected) -> None:
    inside, outside = _attrs_inside(make())
    assert inside == expected
    assert outside == {}


def test_nested_scopes_combine() -> None:
    with (
        tf.Graph().as_default(),
        npu_scope.without_npu_compile_scope(),
        npu_scope.keep_dtype_scope(),
    ):
        op = tf.constant(1.0).op
    assert op.get_attr("_without_npu_compile") is True
    assert op.get_attr("_keep_dtype") == 1


def test_name_scopes() -> None:
    with tf.Graph().as_default():
        with npu_scope.npu_recompute_scope():
            recomputed = tf.constant(1.0, name="c")
        with npu_scope.npu_graph_slice_scope(4):
            sliced = tf.constant(1.0, name="c")
    assert recomputed.op.name == "NpuRecompute/c"
    assert sliced.op.name == "SliceNum-4-NpuGraphSlicing4/c"
    assert _private_attrs(recomputed.op.node_def) == {}


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (
            lambda: npu_scope.npu_variable_scope("all"),
            ValueError,
            r"npu_variable_scope\(placement='all'\): use one of NpuExecutePlacement.ALL",
        ),
        (
            lambda: npu_scope.npu_stage_scope("1"),
            TypeError,
            r"npu_stage_scope\(stage='1'\): stage is str; give an int",
        ),
        (lambda: npu_scope.npu_qos_label_scope(True), TypeError, r"label is bool; give an int"),
        (
            lambda: npu_scope.op_specified_engine_scope(1, "lib"),
            TypeError,
            r"engine_name is int; give a string",
        ),
        (
            lambda: npu_scope.limit_core_num_scope(op_vectorore_num=8),
            ValueError,
            r"give the core count as a string",
        ),
        (
            lambda: npu_scope.limit_core_num_scope(op_vectorore_num="x"),
            ValueError,
            r"not a whole number",
        ),
        (
            lambda: npu_scope.limit_core_num_scope(op_vectorore_num="0"),
            ValueError,
            r"must be greater than zero",
        ),
        (
            lambda: npu_scope.npu_graph_slice_scope(0),
            ValueError,
            r"'slice_num' = 0 is out of range",
        ),
    ],
)
def test_bad_arguments(make, error, message) -> None:
    with pytest.raises(error, match=message):
        make()
