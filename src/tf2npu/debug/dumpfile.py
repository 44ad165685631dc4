"""Dump files and folders, named and laid out as the Ascend tools name them (TF-free).

Both sides of a comparison live here, so the writer (:mod:`tf2npu.runtime.dump`) and the
readers (``tf2npu compare``, ``tf2npu overflow``) cannot drift apart.

NPU side, as the device writes it (``dump_path`` option), with files already in the ``.npy``
form msaccucmp's ``convert`` gives::

    <dump_path>/<YYYYMMDDHHMMSS>/<device_id>/<model_name>/<model_id>/
        ge_proto_<model_id:08d>_Build.json          the model's graph (atc --mode=5 shape)
        <step>/<OpType>.<op_name>.<task_id>.<stream_id>.<timestamp>.<input|output>.<i>.npy
        <step>/<OpType>.<op_name>.<task_id>.<stream_id>.<timestamp>.csv     (dump_data=stats)
        <step>/Opdebug.Node_OpDebug.<task_id>.<stream_id>.<timestamp>.output.0.json  (overflow)

Golden side (a stock run; precision_tool's ``tf/dump``)::

    <dir>/<run>/<step>/<op_name with / -> _>.<output_index>.<timestamp>.npy

``run`` is the run signature's number, which an NPU dump of the same script uses as its
``model_id``. A step folder, or a flat directory of such files, is read as well.

>>> name = NpuFileName("MatMul", sanitize("dense/MatMul"), 3, 0, 1700000000000000)
>>> name.tensor("output", 0)
'MatMul.dense_MatMul.3.0.1700000000000000.output.0.npy'
>>> parse_npu(name.tensor("output", 0)).name == name
True
>>> golden_name("dense/MatMul", 0, 1700000000000000)
'dense_MatMul.0.1700000000000000.npy'
"""

from __future__ import annotations

import contextlib
import csv
import functools
import math
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tf2npu.fs import walk

__all__ = [
    "OPDEBUG_PREFIX",
    "STATS_HEADER",
    "TIME_FORMAT",
    "GoldenFile",
    "NpuFile",
    "NpuFileName",
    "StepDir",
    "TensorStats",
    "find_step_dirs",
    "ge_dtype",
    "golden_key",
    "golden_name",
    "graph_json_name",
    "iter_tensor_files",
    "numpy_dtype",
    "opdebug_name",
    "parse_golden",
    "parse_npu",
    "read_stats_csv",
    "sanitize",
    "save_npy",
    "tensor_stats",
    "write_stats_csv",
]

#: ``time`` folder of the NPU layout (the dump's start, local time).
TIME_FORMAT = "%Y%m%d%H%M%S"
OPDEBUG_PREFIX = "Opdebug.Node_OpDebug."
Kind = Literal["input", "output"]

_UNSAFE = re.compile(r"[/.\\ ]")
_NPU = re.compile(
    r"^(?P<type>[A-Za-z0-9_-]+)\.(?P<name>[A-Za-z0-9_-]+)\.(?P<task>[0-9]+)\.(?P<stream>[0-9]+)"
    r"\.(?P<ts>[0-9]{1,255})(?:\.(?P<kind>input|output)\.(?P<index>[0-9]+)\.npy|\.(?P<ext>csv|json))?$"
)
_NPU_VENDOR = re.compile(
    r"^(?P<type>[A-Za-z0-9_-]+)\.(?P<name>[A-Za-z0-9_-]+)\.(?P<task>[0-9]+)(?:\.(?P<stream>[0-9]+))?"
    r"\.(?P<ts>[0-9]{1,255})(?:\.[0-9]+\.[0-9]+\.[0-9]+)?(?:\.[0-9]+)?"
    r"(?:\.(?P<kind>input|output)\.(?P<index>[0-9]+)(?:\.(?:[0-9]+(?:x[0-9]+)*)?)?\.npy)?$"
)
"""The other names a device dump or its ``msaccucmp.py convert`` output can have
(reference debug-tools.md §2.3-2.4): no stream id (older CANN), the newer
``.task_type.context_id.thread_id.device_id`` tail, and ``convert -f``'s shape suffix
(``.output.0.2x3.npy``). Only :func:`parse_npu` reads it; :func:`parse_golden` keeps excluding
the names our writer gives, so a golden op name holding dots still reads as golden."""
_GOLDEN = re.compile(r"^(?P<name>[.A-Za-z0-9_-]+)\.(?P<index>[0-9]+)\.(?P<ts>[0-9]{1,255})\.npy$")
_GOLDEN_UNSAFE = re.compile(r"[^.A-Za-z0-9_-]")
_GRAPH_JSON = re.compile(r"^ge_proto_([0-9]+)_Build\.json$")


def sanitize(op_name: str) -> str:
    """An op name as it appears in an NPU dump file name (``/``, ``.``, ``\\``, space -> ``_``)."""
    return _UNSAFE.sub("_", op_name)


@dataclass(frozen=True, slots=True)
class NpuFileName:
    """The base name of one op's dump files: ``op_type.op_name.task_id.stream_id.timestamp``."""

    op_type: str
    op_name: str
    """Already sanitized (:func:`sanitize`)."""
    task_id: int
    stream_id: int
    timestamp: int
    """Microseconds since the epoch (16 digits)."""

    @property
    def base(self) -> str:
        return f"{self.op_type}.{self.op_name}.{self.task_id}.{self.stream_id}.{self.timestamp}"

    def tensor(self, kind: Kind, index: int) -> str:
        """The ``.npy`` file of input or output ``index``."""
        return f"{self.base}.{kind}.{index}.npy"

    def stats(self) -> str:
        """The ``dump_data=stats`` file (one CSV row per tensor)."""
        return f"{self.base}.csv"


@dataclass(frozen=True, slots=True)
class NpuFile:
    """A parsed NPU dump file name; ``kind``/``index`` are set for ``.npy`` tensors only."""

    name: NpuFileName
    kind: Kind | None
    index: int | None
    ext: str
    """``npy``, ``csv``, ``json`` (an ``Opdebug`` record) or ``raw`` (a device file not
    converted to ``.npy`` yet)."""


def parse_npu(filename: str) -> NpuFile | None:
    """``filename`` as an NPU dump file, or None when it is not one.

    Besides the names :class:`NpuFileName` gives, the other forms a real device run and
    ``msaccucmp.py convert`` produce are read (no stream id: 0; see ``_NPU_VENDOR``).
    """
    is_opdebug = filename.startswith(OPDEBUG_PREFIX)
    text = filename
    if is_opdebug:  # "Opdebug.Node_OpDebug.T.S.TS.output.0.json"
        text = filename.removesuffix(".output.0.json") + (
            ".json" if filename.endswith(".output.0.json") else ""
        )
    match = _NPU.match(text) or (None if is_opdebug else _NPU_VENDOR.match(text))
    if match is None:
        return None
    stream = int(match["stream"]) if match["stream"] is not None else 0
    name = NpuFileName(match["type"], match["name"], int(match["task"]), stream, int(match["ts"]))
    if match["kind"] is not None:
        kind: Kind = "input" if match["kind"] == "input" else "output"
        return NpuFile(name, kind, int(match["index"]), "npy")
    return NpuFile(name, None, None, match.groupdict().get("ext") or "raw")


def opdebug_name(task_id: int, stream_id: int, timestamp: int) -> str:
    """The overflow record of one op, as msaccucmp ``convert`` names its JSON."""
    return f"{OPDEBUG_PREFIX}{task_id}.{stream_id}.{timestamp}.output.0.json"


@dataclass(frozen=True, slots=True)
class GoldenFile:
    """A parsed golden file name: ``op_name.output_index.timestamp.npy``."""

    op_name: str
    """As in the file (``/`` -> ``_``)."""
    index: int
    timestamp: int


def golden_name(op_name: str, index: int, timestamp: int) -> str:
    """The golden file of output ``index`` of ``op_name`` (a TF op name, ``/`` kept)."""
    return f"{golden_key(op_name)}.{index}.{timestamp}.npy"


def golden_key(op_name: str) -> str:
    """``op_name`` as golden file names spell it: ``/`` (and anything outside
    ``[.A-Za-z0-9_-]``) becomes ``_``."""
    return _GOLDEN_UNSAFE.sub("_", op_name)


def parse_golden(filename: str) -> GoldenFile | None:
    """``filename`` as a golden file, or None (NPU dump names are never taken for golden)."""
    match = _GOLDEN.match(filename)
    if match is None or _NPU.match(filename.removesuffix(".npy")):
        return None
    return GoldenFile(match["name"], int(match["index"]), int(match["ts"]))


def graph_json_name(model_id: int) -> str:
    """The graph JSON kept beside a model's step folders."""
    return f"ge_proto_{model_id:08d}_Build.json"


# -- finding dumps in a tree ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StepDir:
    """One folder of dump files: one step of one model (NPU), or one step of a golden run."""

    path: Path
    kind: Literal["npu", "golden"]
    step: int | None = None
    model_name: str = ""
    model_id: int | None = None
    """NPU: the model's id. Golden: the run signature's number (``<dir>/<run>/<step>``)."""
    device_id: int | None = None
    time: str = ""
    graph_json: Path | None = None
    """The model's ``ge_proto_*_Build.json`` when the tree holds one."""

    def files(self) -> list[str]:
        """The dump files in the folder, sorted by name."""
        return sorted(name for name in os.listdir(self.path) if _is_dump_file(name))


def _is_dump_file(name: str) -> bool:
    return parse_npu(name) is not None or parse_golden(name) is not None


def find_step_dirs(root: str | Path, what: str = "the dump") -> list[StepDir]:
    """Every folder under ``root`` (``root`` included) that holds dump files, in path order.

    The layout fields are read from the path where it has the device shape
    (``time/device/model_name/model_id/step``); a golden folder named by a number is that step.

    Raises:
        UsageError: a folder under ``root`` cannot be listed (named with ``what``).
    """
    root = Path(root)
    found: list[StepDir] = []
    for directory, _subdirs, names in walk(root, what):
        kinds = {_kind(name) for name in names} - {None}
        if not kinds:
            continue
        path = Path(directory)
        kind: Literal["npu", "golden"] = "npu" if "npu" in kinds else "golden"
        found.append(_step_dir(path, kind))
    return found


def _kind(name: str) -> str | None:
    if parse_npu(name) is not None:
        return "npu"
    if parse_golden(name) is not None:
        return "golden"
    return None


def _step_dir(path: Path, kind: Literal["npu", "golden"]) -> StepDir:
    step = int(path.name) if path.name.isdigit() else None
    if kind == "golden":  # <dir>/<run>/<step>, or a step folder alone
        parent = path.parent.name
        run = int(parent) if step is not None and parent.isdigit() else None
        return StepDir(path, kind, step=step, model_id=run)
    parts = path.parts
    model_id = (
        int(parts[-2]) if step is not None and len(parts) >= 2 and parts[-2].isdigit() else None
    )
    if model_id is None:
        return StepDir(path, kind, step=step)
    device = parts[-4] if len(parts) >= 4 else ""
    time = parts[-5] if len(parts) >= 5 else ""
    graph_json: Path | None = path.parent / graph_json_name(model_id)
    if graph_json is not None and not graph_json.is_file():
        graph_json = next(
            (p for p in sorted(path.parent.iterdir()) if _GRAPH_JSON.match(p.name)), None
        )
    return StepDir(
        path,
        kind,
        step=step,
        model_name=parts[-3] if len(parts) >= 3 else "",
        model_id=model_id,
        device_id=int(device) if device.isdigit() else None,
        time=time if len(time) == 14 and time.isdigit() else "",
        graph_json=graph_json,
    )


# -- dtypes ---------------------------------------------------------------------------------

_GE_DTYPES = {
    "float16": "DT_FLOAT16",
    "float32": "DT_FLOAT",
    "float64": "DT_DOUBLE",
    "bfloat16": "DT_BF16",
    "int8": "DT_INT8",
    "int16": "DT_INT16",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "uint8": "DT_UINT8",
    "uint16": "DT_UINT16",
    "uint32": "DT_UINT32",
    "uint64": "DT_UINT64",
    "bool": "DT_BOOL",
    "complex64": "DT_COMPLEX64",
    "complex128": "DT_COMPLEX128",
    "object": "DT_STRING",
}
_NUMPY_DTYPES = {ge: name for name, ge in _GE_DTYPES.items()}


def ge_dtype(dtype: Any) -> str:
    """The GE name (``DT_FLOAT16``) of a numpy dtype or dtype name; unknown -> ``DT_UNDEFINED``."""
    return _GE_DTYPES.get(
        np.dtype(dtype).name if not isinstance(dtype, str) else dtype, "DT_UNDEFINED"
    )


@functools.lru_cache(maxsize=64)
def _ge_dtype(dtype: np.dtype[Any]) -> str:
    return _GE_DTYPES.get(dtype.name, "DT_UNDEFINED")


def numpy_dtype(ge: str) -> str | None:
    """The numpy dtype name of a GE dtype name, or None."""
    return _NUMPY_DTYPES.get(ge)


# -- tensor files ----------------------------------------------------------------------------


_NPY_FORMAT: Any = np.lib.format
"""numpy's ``.npy`` format module (untyped)."""


def save_npy(path: str | Path, array: np.ndarray[Any, Any]) -> None:
    """Write ``array`` as ``np.save(path, array, allow_pickle=False)`` does, byte for byte.

    The header is numpy's own, in format 1.0, the version ``np.save`` picks whenever the header
    fits in 64 KiB (a numeric dtype and at most 32 dimensions always do); the data goes to the
    file in one unbuffered write of the array's memory, without the file-object duplication and
    C stdio ``np.save`` goes through (a few per cent faster on a dump's ~1000 files a step).
    """
    array = np.asarray(array)
    header = _NPY_FORMAT.header_data_from_array_1_0(array)
    data = array.T if header["fortran_order"] else np.ascontiguousarray(array)
    try:
        with open(path, "wb", buffering=0) as stream:
            _NPY_FORMAT.write_array_header_1_0(stream, header)
            if data.nbytes:
                _write_all(stream, data.data.cast("B"))
    except BaseException:  # a disk full mid-write: no cut-short file that reads as a tensor
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def _write_all(stream: Any, view: memoryview) -> None:
    while view:
        written = stream.write(view)
        view = view[written:]


# -- statistics dumps ------------------------------------------------------------------------

STATS_HEADER = (
    "Input/Output",
    "Index",
    "Data Size",
    "Data Type",
    "Format",
    "Shape",
    "Max Value",
    "Min Value",
    "Avg Value",
    "Count",
    "Nan Count",
    "Negative Inf Count",
    "Positive Inf Count",
    "Zero Count",
    "L2Norm Value",
)
"""Columns of a ``dump_data=stats`` file. precision_tool reads columns 0, 1, 3, 5, 6, 7, 8."""


@dataclass(frozen=True, slots=True)
class TensorStats:
    """One row of a statistics dump. Max/min/mean/L2 norm are over the finite elements."""

    kind: Kind
    index: int
    size: int
    dtype: str
    shape: tuple[int, ...]
    max: float
    min: float
    mean: float
    count: int
    nan: int
    neg_inf: int
    pos_inf: int
    zero: int
    l2norm: float

    def row(self) -> list[str]:
        return [
            "Input" if self.kind == "input" else "Output",
            str(self.index),
            str(self.size),
            self.dtype,
            "ND",
            "x".join(map(str, self.shape)),
            _number(self.max),
            _number(self.min),
            _number(self.mean),
            str(self.count),
            str(self.nan),
            str(self.neg_inf),
            str(self.pos_inf),
            str(self.zero),
            _number(self.l2norm),
        ]


def _number(value: float) -> str:
    return repr(float(value))


_AS_IS = (np.dtype(np.float32), np.dtype(np.float64))
"""Dtypes whose statistics are computed on the tensor itself; others on a float64 copy."""


def tensor_stats(kind: Kind, index: int, array: np.ndarray[Any, Any]) -> TensorStats:
    """The statistics row of one tensor; max/min/mean/L2 norm are over its finite elements.

    The figures are those of the tensor converted to float64, computed without that copy where
    it changes nothing: a finite float32 tensor (no NaN or Inf, which its max and min show) takes
    five passes: max, min and the zero count on the tensor itself, the sum with float64
    accumulation (numpy converts in buffers and sums in the same order as on a float64 copy),
    and the sum of squares on a float64 copy. Only a tensor with NaN or Inf pays for the masks.
    """
    array = np.asarray(array)
    flat = array.reshape(-1)
    shape, dtype = tuple(array.shape), _ge_dtype(flat.dtype)
    nan_figure = float("nan")
    if flat.dtype.kind not in "biuf":
        return TensorStats(
            kind, index, flat.nbytes, dtype, shape,
            nan_figure, nan_figure, nan_figure, flat.size, 0, 0, 0, 0, nan_figure,
        )  # fmt: skip
    values = flat if flat.dtype in _AS_IS else flat.astype(np.float64)
    nan = pos_inf = neg_inf = 0
    finite = values
    top, bottom = (values.max(), values.min()) if values.size else (0.0, 0.0)
    if values.dtype.kind == "f" and not (math.isfinite(top) and math.isfinite(bottom)):
        nan = int(np.count_nonzero(np.isnan(values)))
        pos_inf = int(np.count_nonzero(values == np.inf))
        neg_inf = int(np.count_nonzero(values == -np.inf))
        finite = values[np.isfinite(values)]
        if finite.size:
            top, bottom = finite.max(), finite.min()
    figures = (nan_figure,) * 4
    if finite.size:
        squares = finite if finite.dtype == np.float64 else finite.astype(np.float64)
        figures = (
            float(top),
            float(bottom),
            float(np.add.reduce(finite, dtype=np.float64) / finite.size),
            float(np.sqrt(np.dot(squares, squares))),
        )
    return TensorStats(
        kind=kind,
        index=index,
        size=flat.nbytes,
        dtype=dtype,
        shape=shape,
        max=figures[0],
        min=figures[1],
        mean=figures[2],
        count=flat.size,
        nan=nan,
        neg_inf=neg_inf,
        pos_inf=pos_inf,
        zero=int(np.count_nonzero(values == 0)),
        l2norm=figures[3],
    )


def write_stats_csv(path: str | Path, rows: Iterable[TensorStats]) -> None:
    """Write one op's statistics file."""
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(STATS_HEADER)
        writer.writerows(row.row() for row in rows)


def read_stats_csv(path: str | Path) -> list[TensorStats]:
    """Read a statistics file written by :func:`write_stats_csv`.

    Raises:
        ValueError: the file does not start with :data:`STATS_HEADER`.
    """
    with open(path, newline="", encoding="utf-8") as stream:
        lines = list(csv.reader(stream))
    if not lines or tuple(lines[0]) != STATS_HEADER:
        raise ValueError(f"{path}: not a statistics dump (its first line is not the header)")
    return [_stats_of(cells) for cells in lines[1:] if cells]


def _stats_of(cells: Sequence[str]) -> TensorStats:
    kind: Kind = "input" if cells[0] == "Input" else "output"
    shape = tuple(int(d) for d in cells[5].split("x")) if cells[5] else ()
    return TensorStats(
        kind, int(cells[1]), int(cells[2]), cells[3], shape, float(cells[6]), float(cells[7]),
        float(cells[8]), int(cells[9]), int(cells[10]), int(cells[11]), int(cells[12]),
        int(cells[13]), float(cells[14]),
    )  # fmt: skip


def iter_tensor_files(step: StepDir) -> Iterator[tuple[str, NpuFile | GoldenFile]]:
    """The tensor files of one step folder with their parsed names, sorted by file name."""
    for name in sorted(os.listdir(step.path)):  # each name parsed once (files() parses it too)
        parsed: NpuFile | GoldenFile | None = parse_npu(name) if step.kind == "npu" else None
        if parsed is None:
            parsed = parse_golden(name)
        if parsed is not None:
            yield name, parsed
