"""precision_tool's settings module, as scripts import it: ``import precision_tool.config``.

ModelZoo scripts import it beside ``tf_config`` to copy the tool's output elsewhere
(``mox.file.copy_parallel(CONFIG.ROOT_DIR, ...)``); without it the import fails before the
script starts. The names are the real module's; the values are those :mod:`.tf_config` uses
here. Plain constants, as in the real module: importing it seeds nothing, creates nothing and
does not import TensorFlow.
"""

from __future__ import annotations

from tf2npu.compat.shims.precision_tool import _config

__all__ = [
    "ASCEND_LOG_PATH",
    "CMD_ROOT_PATH",
    "DATA_ROOT_DIR",
    "DEFAULT_NPU_DIR",
    "DEFAULT_NPU_DUMP_DIR",
    "DEFAULT_NPU_GRAPH_DIR",
    "DEFAULT_OP_DEBUG_DIR",
    "DUMP_GE_GRAPH_VALUE",
    "DUMP_GRAPH_LEVEL_VALUE",
    "DUMP_SEED",
    "LOG_LEVEL",
    "NPU_OVERFLOW_DUMP_DIR",
    "OP_DEBUG_LEVEL",
    "PRECISION_TOOL_DUMP_FLAG",
    "PRECISION_TOOL_OVERFLOW_FLAG",
    "ROOT_DIR",
    "TF_DEBUG_DUMP_DIR",
    "TF_DUMP_STEP",
]

ROOT_DIR = ""
"""The tool's root; ``precision_data/`` is created under it (the working directory)."""
DATA_ROOT_DIR = _config.ROOT
DEFAULT_OP_DEBUG_DIR = _config.DEFAULT_OP_DEBUG_DIR
DEFAULT_NPU_DIR = _config.DEFAULT_OP_DEBUG_DIR
DEFAULT_NPU_DUMP_DIR = _config.NPU_DUMP_DIR
DEFAULT_NPU_GRAPH_DIR = _config.NPU_GRAPH_DIR
NPU_OVERFLOW_DUMP_DIR = _config.OVERFLOW_DUMP_DIR
TF_DEBUG_DUMP_DIR = _config.TF_DEBUG_DUMP_DIR

TF_DUMP_STEP = _config.TF_DUMP_STEP
DUMP_SEED = _config.DUMP_SEED
OP_DEBUG_LEVEL = _config.OP_DEBUG_LEVEL
DUMP_GE_GRAPH_VALUE = int(_config.GRAPH_DUMP_ENV["DUMP_GE_GRAPH"])
DUMP_GRAPH_LEVEL_VALUE = int(_config.GRAPH_DUMP_ENV["DUMP_GRAPH_LEVEL"])
PRECISION_TOOL_DUMP_FLAG = _config.DUMP_ENV_FLAG
PRECISION_TOOL_OVERFLOW_FLAG = _config.OVERFLOW_ENV_FLAG

CMD_ROOT_PATH = "/usr/local/Ascend/"
"""Where the real tool looks for ``atc`` and ``msaccucmp.py``; nothing here reads it."""
ASCEND_LOG_PATH = "/root/ascend/log/plog/"
LOG_LEVEL = "NOTSET"
