"""tf2npu's stand-in for Huawei's ``npu_bridge`` package (the TF Adapter's Python API).

The module tree mirrors the real package's paths so that migrated scripts import unchanged.

Importing it does one of two things:

* if Huawei's real adapter is installed anywhere on ``sys.path``, the import is handed over to
  it (:mod:`npu_bridge._handover`): ``import npu_bridge`` yields the real package, which always
  wins;
* otherwise it installs tf2npu's session hook (:func:`tf2npu.runtime.install`): a session whose
  ``ConfigProto`` carries the ``NpuOptimizer`` custom optimizer runs through tf2npu's graph
  engine.

See ``docs/npu-bridge-api.md``.
"""

from pathlib import Path as _Path

from npu_bridge._handover import hand_over as _hand_over

__version__ = "v1.15.0"

if not _hand_over(_Path(__file__).parent):
    import tf2npu.runtime as _runtime

    _runtime.install()
