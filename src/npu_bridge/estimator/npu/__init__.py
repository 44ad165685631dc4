"""``npu_bridge.estimator.npu``: run config, scopes, loss scaling and the other NPU helpers.

Each module mirrors the real adapter's module of the same name and imports without an NPU.
"""
