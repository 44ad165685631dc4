"""``npu_bridge.tbe``: wrappers of fused TBE vector ops (:mod:`.npu_vector_ops`)."""
