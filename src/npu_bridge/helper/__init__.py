"""``npu_bridge.helper``: access to the generated NPU op wrappers (:mod:`.helper`)."""
