"""helper.get_gen_ops: generated-wrapper names resolve to tf2npu's ops; unknown names fail."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.helper.helper import get_gen_ops  # noqa: E402

pytestmark = pytest.mark.tf


def test_gelu_resolves_to_the_op_library() -> None:
    from npu_bridge.estimator.npu_unary_ops import npu_unary_ops

    gen = get_gen_ops()
    assert gen is get_gen_ops()
    assert gen.gelu == npu_unary_ops.gelu
    with tf.Graph().as_default():
        y = gen.gelu(tf.constant([1.0]))
        with tf.compat.v1.Session() as sess:
            assert round(float(sess.run(y)[0]), 4) == 0.8412


def test_system_ops() -> None:
    with tf.Graph().as_default():
        op = get_gen_ops().npu_init()
        assert op.get_attr("_npu_op") == b"NPUInit"
        assert get_gen_ops().npu_shutdown().get_attr("_npu_op") == b"NPUShutdown"


def test_unknown_op_names_the_op() -> None:
    with pytest.raises(AttributeError, match="'hcom_all_reduce' has no CPU implementation"):
        get_gen_ops().hcom_all_reduce  # noqa: B018


def test_aicore_ops_resolve_to_their_library() -> None:
    from npu_bridge.estimator.npu_aicore_ops import npu_aicore_ops

    assert get_gen_ops().fast_gelu == npu_aicore_ops.fast_gelu
    assert get_gen_ops().drop_out_do_mask_v3 == npu_aicore_ops.drop_out_do_mask_v3
    with pytest.raises(AttributeError, match=r"available: .*fast_gelu_grad.*gelu_grad"):
        get_gen_ops().fast_gelu_v2  # noqa: B018
