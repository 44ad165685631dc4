"""Profile folders, named and laid out as msprof writes them (TF-free).

The one home of the profile format: the writer (:mod:`tf2npu.runtime.profile`, through
:class:`tf2npu.artifacts.profile_raw.RawWriter`) and the readers (``tf2npu profile --from``,
``tf2npu doctor --run-dir``, :mod:`tf2npu.debug.profile.report`) take every folder name, file
name and table column from here. The layout is the one msprof-analyze 26.2.0 looks for
(``advisor/config/profiling_data_version_config.yaml``, text data)::

    <output>/PROF_<6 digits>_<17 digits>_<id>/
        device_<n>/info.json.<n>          the device facts we know: its id, the rank id
        device_<n>/data/                  our raw files (ops.jsonl, iterations.jsonl, ...)
        mindstudio_profiler_output/
            op_summary_<14 digits>.csv    msprof's columns, then ours
            op_statistic_<14 digits>.csv
            step_trace_<14 digits>.csv
            trace_view.json               a top-level JSON list of trace events

msprof names the folder ``PROF_<pid, 6 digits>_<start time to the millisecond, 17
digits>_<16 letters>``; the tables carry the start time to the second (14 digits). Profiles
written before this layout, ``PROF_<14 digits>/`` with ``{"traceEvents": [...]}``, are read too.

>>> name = folder_name(4321, "20240101120000123", "ABCDEFGHIJKLMNOP")
>>> name
'PROF_004321_20240101120000123_ABCDEFGHIJKLMNOP'
>>> table_stamp(name)
'20240101120000'
>>> table_stamp("PROF_20240101120000")
'20240101120000'
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "COMPILES",
    "DATA_DIR",
    "INFO_PREFIX",
    "ITERATIONS",
    "META",
    "NA",
    "NOT_MEASURED",
    "OPS",
    "OP_STATISTIC",
    "OP_STATISTIC_COLUMNS",
    "OP_SUMMARY",
    "OP_SUMMARY_COLUMNS",
    "OUTPUT_DIR",
    "PROF_PREFIX",
    "STEP_TRACE",
    "STEP_TRACE_COLUMNS",
    "TRACE_VIEW",
    "device_dir",
    "folder_name",
    "info_json",
    "info_name",
    "is_folder_name",
    "table_name",
    "table_stamp",
]

PROF_PREFIX = "PROF_"
FOLDER_PATTERN = re.compile(r"^PROF_(\d{6})_(\d{17})_(\w+)$")
"""msprof's folder name, as msprof-analyze matches it (``^PROF_\\d{6}_\\d{17}_\\w+$``)."""
OLD_FOLDER_PATTERN = re.compile(r"^PROF_(\d{14})(?:_\d+)?$")
"""The name tf2npu wrote before (``PROF_<%Y%m%d%H%M%S>``, ``_<n>`` when taken)."""

OUTPUT_DIR = "mindstudio_profiler_output"
DATA_DIR = "data"
INFO_PREFIX = "info.json."
"""``device_<n>/info.json.<n>``: msprof-analyze reads every file starting so."""

OPS = "ops.jsonl"
ITERATIONS = "iterations.jsonl"
COMPILES = "compiles.jsonl"
META = "meta.json"

OP_SUMMARY = "op_summary"
OP_STATISTIC = "op_statistic"
STEP_TRACE = "step_trace"
TRACE_VIEW = "trace_view.json"
"""msprof-analyze's Msprof dataset reads it as a JSON list of events (chrome tracing and
Perfetto read that form too); tf2npu wrote ``{"traceEvents": [...]}`` before."""

NA = "N/A"
"""A cell msprof fills only on the device (PMU counters, block dims): never a made-up number."""
NOT_MEASURED = "not measured"

OP_SUMMARY_COLUMNS = (
    "Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State",
    "Task Type", "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Num",
    "Mix Block Num", "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats",
    "Output Shapes", "Output Data Types", "Output Formats", "Context ID",
    # ours, after msprof's (no PMU columns off the device)
    "Iteration ID", "GeOp", "Origin Ops", "Precision", "Fused By", "Host Reason", "Source",
    "Bytes",
)  # fmt: skip
"""msprof's columns in its order (``Model Name``/``Infer ID`` are hidden by default there too),
then ours. msprof-analyze looks columns up by name (``format_excel_title``: ``Task Duration(us)``
is its ``task_duration``)."""
OP_STATISTIC_COLUMNS = (
    "Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Avg Time(us)",
    "Min Time(us)", "Max Time(us)", "Ratio(%)",
)  # fmt: skip
STEP_TRACE_COLUMNS = (
    "Device_id", "Iteration ID", "FP Start(us)", "BP End(us)", "Iteration End(us)",
    "Iteration Time(us)", "FP to BP Time(us)", "Iteration Refresh(us)", "Data Aug Bound(us)",
    "Model ID", "Reduce Start(us)", "Reduce Duration(us)",
    # ours
    "Train", "GetNext Time(us)", "Input Time(us)", "Host-Device Copies",
    "Host-Device Copy Bytes",
)  # fmt: skip


def folder_name(pid: int, started: str, token: str) -> str:
    """``PROF_<pid, 6 digits>_<started>_<token>``, msprof's folder name.

    Raises:
        ValueError: ``started`` is not 17 digits (``%Y%m%d%H%M%S`` and milliseconds) or
            ``token`` is not word characters.
    """
    name = f"{PROF_PREFIX}{pid % 1_000_000:06d}_{started}_{token}"
    if not FOLDER_PATTERN.match(name):
        raise ValueError(
            f"profile folder name {name!r}: give the start time as 17 digits "
            f"(%Y%m%d%H%M%S and milliseconds, got {started!r}) and an id of letters, digits "
            f"or _ (got {token!r})"
        )
    return name


def is_folder_name(name: str) -> bool:
    """Whether ``name`` is a profile folder's name (msprof's, or the one tf2npu wrote before)."""
    return bool(FOLDER_PATTERN.match(name) or OLD_FOLDER_PATTERN.match(name))


def table_stamp(name: str) -> str:
    """The 14-digit ``<time>`` of the tables' names (``op_summary_<time>.csv``) for the folder
    ``name``; "" when the name carries none."""
    new = FOLDER_PATTERN.match(name)
    if new:
        return new.group(2)[:14]
    old = OLD_FOLDER_PATTERN.match(name)
    return old.group(1) if old else ""


def table_name(table: str, stamp: str) -> str:
    """``op_summary_<stamp>.csv`` (msprof-analyze matches ``^op_summary_\\d{14}\\.csv$``)."""
    return f"{table}_{stamp}.csv"


def device_dir(device_id: int) -> str:
    return f"device_{device_id}"


def info_name(device_id: int) -> str:
    """``info.json.<device_id>``, inside :func:`device_dir`."""
    return f"{INFO_PREFIX}{device_id}"


def info_json(device_id: int, rank_id: int | None) -> dict[str, Any]:
    """The device facts a profile knows: the device id the script asked for and its rank id.

    msprof's ``info.json.<n>`` also holds the chip's core counts and clock (``ai_core_num``,
    ``aic_frequency``, ...); nothing here measures those, so they are left out (msprof-analyze's
    ``DeviceInfoParser`` then logs "No ai_core_num" and goes on without them) rather than made up.
    ``rank_id`` is left out when the run had no ``RANK_ID``.
    """
    info: dict[str, Any] = {"devices": str(device_id), "DeviceInfo": [{"id": device_id}]}
    if rank_id is not None:
        info["rank_id"] = rank_id
    return info
