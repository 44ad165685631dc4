"""tf2npu's stand-in for Huawei's ``precision_tool`` (``import precision_tool.tf_config``).

Under ``tf2npu run`` a script that imports ``precision_tool`` without a copy of the real tool
beside it gets this package (see :mod:`tf2npu.compat.shims.fallback`). Provided: the TensorFlow
integration, :mod:`.tf_config` (the same public names, ``action`` parsing, ``parameter_map``
settings, ``precision_data/`` directories and environment variables as the real one), and the
settings module :mod:`.config` (its constants). The tool's command line (``cli.py``) is not;
``tf2npu compare`` and ``tf2npu overflow`` take its place. See ``docs/precision-tool.md``.
"""
