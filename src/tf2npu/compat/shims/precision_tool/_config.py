"""precision_tool's fixed settings and the ``precision_data/`` tree its entry points create.

Every path is relative to the working directory, as in the real tool (its ``ROOT_DIR`` is
``''``), so the tree appears where the training script runs. TF-free.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent

FUSION_OFF_FILE = str(PACKAGE_DIR / "fusion_off.cfg")
"""Switch file turning every fusion pass off (``"ALL": "off"`` in both categories)."""
FUSION_SWITCH_FILE = str(PACKAGE_DIR / "fusion_switch.cfg")
"""Switch file template the user edits to turn single passes off; as shipped it switches none."""

ROOT = "precision_data"
DEFAULT_OP_DEBUG_DIR = f"{ROOT}/npu/debug_0"
"""The NPU run's directory: ``debug_dir`` and the parent of its dump, graph and profile dirs."""
NPU_DUMP_DIR = f"{DEFAULT_OP_DEBUG_DIR}/dump"
NPU_GRAPH_DIR = f"{DEFAULT_OP_DEBUG_DIR}/graph"
NPU_PROF_DIR = f"{DEFAULT_OP_DEBUG_DIR}/prof"
OVERFLOW_DUMP_DIR = f"{ROOT}/overflow/dump"
TF_DEBUG_DUMP_DIR = f"{ROOT}/tf/tf_debug"
"""Where ``sess_dump``/``estimator_dump``'s tfdbg wrappers write the golden run."""

CREATED_DIRS = (
    DEFAULT_OP_DEBUG_DIR,
    OVERFLOW_DUMP_DIR,
    NPU_DUMP_DIR,
    NPU_GRAPH_DIR,
    NPU_PROF_DIR,
)
"""Created (mode 0o700) by every entry point, in this order."""

DUMP_SEED = 2022
TF_DUMP_STEP = "0"
OP_DEBUG_LEVEL = 4

GRAPH_DUMP_ENV = {
    "DUMP_GE_GRAPH": "2",
    "DUMP_GRAPH_LEVEL": "3",
    "DUMP_GRAPH_PATH": NPU_GRAPH_DIR,
    "NPU_DUMP_GRAPH": "true",
}
"""Environment every entry point sets: the graph engine dumps its graphs to the graph dir."""

DUMP_ENV_FLAG = "PRECISION_TOOL_DUMP"
OVERFLOW_ENV_FLAG = "PRECISION_TOOL_OVERFLOW"
"""With ``action=None``, these set to ``True`` switch the dump / overflow collection on."""

PROFILING_OPTIONS = {
    "output": NPU_PROF_DIR,
    "storage_limit": "1000MB",
    "training_trace": "on",
    "l2": "on",
    "hccl": "on",
    "task_trace": "on",
    "aicpu": "on",
    "fp_point": "",
    "bp_point": "",
    "aic_metrics": "PipeUtilization",
    "msproftx": "on",
}
"""``profiling_options`` (as JSON) for the ``prof`` action."""


def init_precision_data(env: MutableMapping[str, str] = os.environ) -> None:
    """The real tool's ``_init()``: create :data:`CREATED_DIRS`, set :data:`GRAPH_DUMP_ENV`.

    A directory that cannot be created is reported and skipped, as the real tool does: the
    run goes on, and a dump that needed it fails later naming its ``dump_path``.
    """
    for path in CREATED_DIRS:
        if os.path.exists(path):
            continue
        try:
            os.makedirs(path, mode=0o700)
        except OSError as exc:
            print(f"[PrecisionTool] Failed to create {path}. {exc}")
    env.update(GRAPH_DUMP_ENV)
