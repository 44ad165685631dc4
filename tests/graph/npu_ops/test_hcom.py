"""hcom: the HCCL op definitions, and their CPU bodies (TF collectives) on a group of one.

Across ranks they are checked by the 2-rank job of tests/runtime/distributed/test_launch.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.npu_ops.catalogue import NPU_OPS
from tf2npu.graph.npu_ops.hcom import HCOM_OPS, MERGE_OPS

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

X = np.array([[1.0, -2.0], [3.0, 4.5]], np.float32)


def test_every_hcom_op_is_in_the_catalogue_with_its_keys() -> None:
    assert sorted(op.name for op in HCOM_OPS) == [
        "HcomAllGather", "HcomAllReduce", "HcomBroadcast", "HcomReceive", "HcomReduce",
        "HcomReduceScatter", "HcomSend",
    ]  # fmt: skip
    for op in HCOM_OPS:
        assert NPU_OPS[op.name] is op
        names = [attr.name for attr in op.attrs]
        # No TensorFlow timeout: it would cost two threads per execution (see hcom's doc).
        assert names[-4:] == ["group_size", "group_key", "instance_key", "dynamic"], op.name
    assert MERGE_OPS == {"sum": "Add", "prod": "Mul", "max": "Max", "min": "Min"}


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("HcomAllReduce", {"reduction": "sum"}),
        ("HcomAllReduce", {"reduction": "min"}),
        ("HcomAllGather", {}),
        ("HcomBroadcast", {"root_rank": 0, "rank": 0}),
        ("HcomReduce", {"reduction": "prod", "root_rank": 0}),
        ("HcomReduceScatter", {"reduction": "max", "rank": 0}),
    ],
)
def test_a_group_of_one_gives_the_tensor_back(op: str, attrs: dict[str, object]) -> None:
    from tf2npu.client.ops import emit
    from tf2npu.graph.npu_ops.nodes import NPU_OP_ATTR

    keys = {"group_size": 1, "group_key": 9, "instance_key": 100 + len(attrs)}
    with tf.Graph().as_default():
        (out,) = emit(op, [tf.constant(X)], {**attrs, **keys})
        assert out.op.get_attr(NPU_OP_ATTR) == op.encode()
        with tf.compat.v1.Session() as session:
            assert session.run(out).tobytes() == X.tobytes()


@pytest.mark.parametrize("op", ["HcomAllReduce", "HcomAllGather", "HcomBroadcast"])
def test_a_dynamic_collective_takes_a_new_shape_each_run(op: str) -> None:
    from tf2npu.client.ops import emit

    attrs = {"reduction": "sum"} if op == "HcomAllReduce" else {}
    if op == "HcomBroadcast":
        attrs = {"root_rank": 0, "rank": 0}
    keys = {"group_size": 1, "group_key": 9, "instance_key": 300, "dynamic": True}
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 2])
        (out,) = emit(op, [x], {**attrs, **keys})
        with tf.compat.v1.Session() as session:
            for rows in (3, 5, 3, 1):
                value = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
                assert session.run(out, {x: value}).tobytes() == value.tobytes()
