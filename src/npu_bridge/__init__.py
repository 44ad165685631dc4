"""tf2npu's stand-in for Huawei's ``npu_bridge`` package (the TF Adapter's Python API).

The module tree mirrors the real package's paths so that migrated scripts import unchanged.
Its modules are added by tf2npu's runtime; until then only the package and its version exist.
"""

__version__ = "v1.15.0"
