"""``npu_bridge.estimator``: the estimator-side API of the TF Adapter (``npu`` subpackage)."""
