"""``npu_bridge.npu_cpu``: the AI-CPU op wrappers (:mod:`.npu_cpu_ops`, :mod:`.lru_cache`)."""
