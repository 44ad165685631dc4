"""Dump files and folders, named and laid out as the Ascend tools name them (TF-free).

The one home of the dump format: the writer (:mod:`tf2npu.runtime.dump`) and the readers
(``tf2npu compare``, ``tf2npu overflow``) both use it, so they cannot drift apart.

NPU side, as the device writes it (``dump_path`` option)::

    <dump_path>/<YYYYMMDDHHMMSS>/<device_id>/<model_name>/<model_id>/<step>/
        <OpType>.<op_name>.<task_id>.<stream_id>.<timestamp>      one raw file per op
        <OpType>.<op_name>.<task_id>.<stream_id>.<timestamp>.csv  (dump_data=stats)
        Opdebug.Node_OpDebug.<task_id>.<stream_id>.<timestamp>    (overflow: a raw record,
                                                                    :mod:`tf2npu.artifacts.opdebug`)
    <dump_path>/graph/<YYYYMMDDHHMMSS>/<model_name>.json   each model's graph JSON

A raw file holds the op's inputs and outputs together in the TLV ("nano") layout msaccucmp
parses in pure Python (``dump_parse/nano_dump_data.py``): a uint64 header length, the header
(magic ``0x5A5A5A5A``, version, the inputs' and outputs' descriptors), then the inputs' data and
the outputs' data (:func:`write_nano`, :func:`read_nano`). ``op_name`` has every character
outside ``[A-Za-z0-9_-]`` replaced by ``_`` (msaccucmp's ``OFFLINE_DUMP_PATTERN`` admits no
other; it looks ops up with ``/`` and ``.`` replaced). The converted form ``msaccucmp.py
convert`` writes, ``<base>.<input|output>.<i>.npy``, is read too (:class:`NpuFileName`).

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
import io
import math
import os
import re
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tf2npu.fs import open_regular, walk

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
    "iter_tensor_files",
    "numpy_dtype",
    "opdebug_name",
    "parse_golden",
    "parse_npu",
    "read_stats_csv",
    "sanitize",
    "save_npy",
    "stats_from_sums",
    "stats_line_tail",
    "tensor_stats",
    "write_stats_csv",
    "write_stats_lines",
]

#: ``time`` folder of the NPU layout (the dump's start, local time).
TIME_FORMAT = "%Y%m%d%H%M%S"
OPDEBUG_PREFIX = "Opdebug.Node_OpDebug."
Kind = Literal["input", "output"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
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
_GRAPH_JSON = re.compile(r"^ge_proto_([0-9]+)_Build(?:\.txt)?\.json$")
"""A graph JSON beside step folders: atc's output as seed 001 names it, or as precision_tool
does (``<GE's .txt>.json``)."""


def sanitize(op_name: str) -> str:
    """An op name as it appears in an NPU dump file name (outside ``[A-Za-z0-9_-]`` -> ``_``)."""
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


GRAPH_DIR = "graph"
"""``<dump_path>/graph/<time>/``: the graph JSONs of one dump, one per model, named by it.
Not inside ``<time>/``: msaccucmp's batch mode takes every entry there for a device folder,
and every entry of ``<model_id>/`` for a step folder (the largest name wins)."""


def model_name(graph_name: str, model_id: int) -> str:
    """A model's name: its GeOp's and the run signature's number (``GeOp1_0_2``)."""
    return f"{sanitize(graph_name)}_{model_id}"


def model_graph_json(dump_path: str | Path, time: str, model: str) -> Path:
    """Where the graph JSON of ``model`` (its name) of the dump at ``time`` is written."""
    return Path(dump_path) / GRAPH_DIR / time / f"{model}.json"


def graph_json_of(step: Path) -> Path | None:
    """The graph JSON of the model a step folder belongs to, or None: where the writer puts
    it (:func:`model_graph_json`), else a ``ge_proto_*_Build[.txt].json`` beside the step folders
    (older tf2npu dumps, hand-made trees) or in the folder itself."""
    parts = step.absolute().parts
    if len(parts) >= 6 and step.name.isdigit() and parts[-2].isdigit():
        written = model_graph_json(Path(*parts[:-5]), parts[-5], parts[-3])
        if written.is_file():
            return written
    for place in (step.parent, step):
        try:
            found = sorted(p for p in place.iterdir() if _GRAPH_JSON.match(p.name))
        except OSError:
            continue
        if found:
            return found[0]
    return None


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
    graph_json = graph_json_of(path)
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


def stats_from_sums(
    kind: Kind,
    index: int,
    *,
    size: int,
    dtype: str,
    shape: tuple[int, ...],
    count: int,
    sums: tuple[float, float, float, float],
    non_finite: tuple[int, int, int] = (0, 0, 0),
    zero: int,
) -> TensorStats:
    """A statistics row from a tensor's reductions, wherever they were computed (numpy here,
    the run's own graph for ``dump_data=stats``: ``tf2npu.runtime.dump.measure``).

    ``sums`` are (max, min, sum, sum of squares) over the finite elements, ``non_finite`` the
    (NaN, -Inf, +Inf) counts. With no finite element the four figures are NaN.
    """
    nan, neg_inf, pos_inf = non_finite
    finite = count - nan - neg_inf - pos_inf
    top, bottom, total, squares = sums
    figures = (float("nan"),) * 4
    if finite > 0:
        figures = (float(top), float(bottom), float(total) / finite, math.sqrt(float(squares)))
    return TensorStats(
        kind=kind,
        index=index,
        size=size,
        dtype=dtype,
        shape=shape,
        max=figures[0],
        min=figures[1],
        mean=figures[2],
        count=count,
        nan=nan,
        neg_inf=neg_inf,
        pos_inf=pos_inf,
        zero=zero,
        l2norm=figures[3],
    )


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
    total = squares = 0.0
    if finite.size:
        copy = finite if finite.dtype == np.float64 else finite.astype(np.float64)
        total, squares = np.add.reduce(finite, dtype=np.float64), np.dot(copy, copy)
    return stats_from_sums(
        kind, index, size=flat.nbytes, dtype=dtype, shape=shape, count=flat.size,
        sums=(top, bottom, total, squares), non_finite=(nan, neg_inf, pos_inf),
        zero=int(np.count_nonzero(values == 0)),
    )  # fmt: skip


_CSV_SPECIAL = re.compile(r'[,"\r\n]')


def _csv_line(cells: Sequence[str]) -> str:
    """One line as ``csv.writer`` writes it (``\\r\\n`` ends it); our cells never need
    quoting, a cell that would is handed to the csv module."""
    if any(_CSV_SPECIAL.search(cell) for cell in cells):
        buffer = io.StringIO()
        csv.writer(buffer).writerow(cells)
        return buffer.getvalue()
    return ",".join(cells) + "\r\n"


_STATS_HEADER_LINE = _csv_line(STATS_HEADER).encode()
_KIND_CELL = {"input": "Input", "output": "Output"}


def stats_line_tail(stats: TensorStats) -> str:
    """A row's line after its first two cells (``Input/Output``, ``Index``), as
    :func:`write_stats_csv` writes it: one tensor read by several ops (an output and the next
    op's input) is formatted once and labelled per op by :func:`write_stats_lines`."""
    line = _csv_line(stats.row())
    return line[line.index(",", line.index(",") + 1) + 1 :]


def write_stats_lines(path: str | Path, rows: Iterable[tuple[Kind, int, str]]) -> None:
    """Write one op's statistics file from (kind, index, :func:`stats_line_tail`) rows: the
    bytes ``csv.writer`` writes, in one unbuffered write (a stats dump writes one such file
    per op per step; the csv module and a text stream cost more than creating the file)."""
    text = "".join(f"{_KIND_CELL[kind]},{index},{tail}" for kind, index, tail in rows)
    with open(path, "wb", buffering=0) as stream:
        _write_all(stream, memoryview(_STATS_HEADER_LINE + text.encode()))


def write_stats_csv(path: str | Path, rows: Iterable[TensorStats]) -> None:
    """Write one op's statistics file."""
    write_stats_lines(path, ((row.kind, row.index, stats_line_tail(row)) for row in rows))


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


# -- raw device files: the TLV ("nano") layout -----------------------------------------------

NANO_MAGIC = 0x5A5A5A5A
"""The TLV header's first word (msaccucmp ``dump_parse/nano_dump_data.py``)."""
NANO_VERSION = 1
_TLV_INPUT_DESC = 4
_TLV_OUTPUT_DESC = 5
_TLNV_SHAPE, _TLNV_ORIGIN_SHAPE, _TLNV_ORIGIN_NAME = 0, 1, 2
FORMAT_ND = 2
"""GE's ``Format`` enum: ``FORMAT_ND`` (what a CPU-computed tensor is in)."""

_NANO_DTYPES = {
    "float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6, "uint16": 7,
    "uint32": 8, "int64": 9, "uint64": 10, "float64": 11, "bool": 12, "complex64": 16,
    "complex128": 17, "bfloat16": 27,
}  # fmt: skip
"""numpy dtype name -> the nano header's ``data_type`` (msaccucmp ``NanoDataType``)."""
_NANO_NUMPY = {code: name for name, code in _NANO_DTYPES.items()}
_INPUT_HEAD = struct.Struct("<iiiQQQI")
"""data_type, format, address_type, address, offset, size, tlv_list_len."""
_OUTPUT_HEAD = struct.Struct("<iiiiiiQQQI")
"""data_type, format, address_type, original_index, original_data_type, original_format,
address, offset, size, tlv_list_len."""
_TL = struct.Struct("<II")
ADDRESS_ABSENT = -1
"""``address_type`` of a tensor tf2npu did not take (a ref variable's read, a fed tensor): it
holds no data (shape ``(0,)``) and keeps the later tensors at their positions. msaccucmp does
not read the field; :func:`parse_nano` marks such entries :attr:`NanoTensor.absent`."""
_ABSENT = np.zeros(0, np.float32)


@dataclass(frozen=True, slots=True)
class NanoTensor:
    """One input or output as a raw file's header describes it."""

    dtype: str
    """numpy dtype name."""
    shape: tuple[int, ...]
    offset: int
    """Where its data starts in the file."""
    size: int
    origin_name: str = ""
    origin_index: int = -1
    absent: bool = False


@dataclass(frozen=True, slots=True)
class NanoDump:
    """A raw dump file's header: its inputs and outputs, in file order."""

    inputs: tuple[NanoTensor, ...]
    outputs: tuple[NanoTensor, ...]

    def tensor(self, kind: Kind, index: int) -> NanoTensor:
        """Input or output ``index``.

        Raises:
            KeyError: the file has no such tensor.
        """
        side = self.inputs if kind == "input" else self.outputs
        if not 0 <= index < len(side):
            raise KeyError(f"{kind} {index} (the file holds {len(side)} {kind}s)")
        if side[index].absent:
            raise KeyError(f"{kind} {index} (not dumped: the writer could not take it)")
        return side[index]

    def present(self) -> Iterator[tuple[Kind, int]]:
        """The (input|output, index) of every tensor the file holds data for."""
        for kind, side in (("input", self.inputs), ("output", self.outputs)):
            for index, tensor in enumerate(side):
                if not tensor.absent:
                    yield kind, index  # type: ignore[misc]


def nano_dtype(dtype: Any) -> int:
    """The nano ``data_type`` of a numpy dtype.

    Raises:
        ValueError: a dtype the layout has no code for (strings, objects).
    """
    name = np.dtype(dtype).name
    if name not in _NANO_DTYPES:
        raise ValueError(
            f"dtype {name!r} has no code in the raw dump layout; dump numeric tensors only "
            f"({', '.join(sorted(_NANO_DTYPES))})"
        )
    return _NANO_DTYPES[name]


def _tlnv(tag: int, payload: bytes) -> bytes:
    return _TL.pack(tag, len(payload)) + payload


def _dims(shape: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(shape)}Q", *shape)


def nano_header(
    inputs: Sequence[np.ndarray[Any, Any] | None],
    outputs: Sequence[np.ndarray[Any, Any] | None],
    origins: Sequence[tuple[str, int] | None] = (),
) -> bytes:
    """The TLV header of one op's raw file, its length word first (what precedes the data).

    ``origins[i]`` is the user tensor (op name, output index) output ``i`` stands for; it
    goes to the header's ``origin_name`` (msaccucmp reads it; the graph JSON's
    ``_datadump_origin_name`` is what matches tensors). Fields as ``NanoDumpData.parse_tlv_head``
    reads them: magic, version, then a TLV of tag 4 holding ``inputs_num`` and each input's
    fixed fields and shape TLNVs, then a TLV of tag 5 likewise for the outputs. A None tensor
    is written absent (:data:`ADDRESS_ABSENT`).
    """
    entries = []
    for given in inputs:
        array, where = (_ABSENT, ADDRESS_ABSENT) if given is None else (given, 0)
        dims = _tlnv(_TLNV_SHAPE, _dims(array.shape)) + _tlnv(
            _TLNV_ORIGIN_SHAPE, _dims(array.shape)
        )
        code = nano_dtype(array.dtype)
        fixed = _INPUT_HEAD.pack(code, FORMAT_ND, where, 0, 0, array.nbytes, len(dims))
        entries.append(fixed + dims)
    body_in = struct.pack("<I", len(inputs)) + b"".join(entries)
    entries = []
    for i, given in enumerate(outputs):
        array, where = (_ABSENT, ADDRESS_ABSENT) if given is None else (given, 0)
        origin = origins[i] if i < len(origins) else None
        name, index = origin if origin is not None else ("", -1)
        tail = (
            _tlnv(_TLNV_SHAPE, _dims(array.shape))
            + _tlnv(_TLNV_ORIGIN_SHAPE, _dims(array.shape))
            + _tlnv(_TLNV_ORIGIN_NAME, name.encode("ascii", "replace"))
        )
        code = nano_dtype(array.dtype)
        fixed = _OUTPUT_HEAD.pack(
            code, FORMAT_ND, where, index, code, FORMAT_ND, 0, 0, array.nbytes, len(tail)
        )
        entries.append(fixed + tail)
    body_out = struct.pack("<I", len(outputs)) + b"".join(entries)
    head = (
        struct.pack("<II", NANO_MAGIC, NANO_VERSION)
        + _tlnv(_TLV_INPUT_DESC, body_in)
        + _tlnv(_TLV_OUTPUT_DESC, body_out)
    )
    return struct.pack("<Q", len(head)) + head


def write_nano(
    path: str | Path,
    inputs: Sequence[Any | None],
    outputs: Sequence[Any | None],
    origins: Sequence[tuple[str, int] | None] = (),
) -> int:
    """Write one op's raw dump file (header, then inputs' data, then outputs'); returns the
    bytes of tensor data written. None stands for a tensor not taken (written absent)."""
    ins = [None if v is None else _c_order(v) for v in inputs]
    outs = [None if v is None else _c_order(v) for v in outputs]
    header = nano_header(ins, outs, origins)
    try:
        with open(path, "wb", buffering=0) as stream:
            _write_all(stream, memoryview(header))
            for array in (*ins, *outs):
                if array is not None and array.nbytes:
                    _write_all(stream, array.data.cast("B"))
    except BaseException:  # a disk full mid-write: no cut-short file that reads as an op's
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return sum(a.nbytes for a in (*ins, *outs) if a is not None)


def _c_order(value: Any) -> np.ndarray[Any, Any]:
    array = np.asarray(value)  # not np.ascontiguousarray: it makes a scalar 1-D
    return array if array.flags.c_contiguous else array.copy(order="C")


def is_nano(head: bytes) -> bool:
    """Whether a file starting with ``head`` (12 bytes or more) is in the raw TLV layout."""
    return len(head) >= 12 and struct.unpack_from("<I", head, 8)[0] == NANO_MAGIC


class _Cursor:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.at, self.what = data, 0, what

    def take(self, layout: struct.Struct) -> tuple[Any, ...]:
        if self.at + layout.size > len(self.data):
            raise ValueError(f"{self.what}: the header ends inside a field (byte {self.at})")
        values = layout.unpack_from(self.data, self.at)
        self.at += layout.size
        return values

    def tlv(self, tag: int) -> int:
        got, length = self.take(_TL)
        if got != tag:
            raise ValueError(f"{self.what}: tag {got} at byte {self.at - 8}, expected {tag}")
        return int(length)

    def raw(self, length: int) -> bytes:
        if self.at + length > len(self.data):
            raise ValueError(f"{self.what}: a field of {length} bytes runs past the header")
        chunk = self.data[self.at : self.at + length]
        self.at += length
        return chunk


_U32 = struct.Struct("<I")


def _tlnvs(cursor: _Cursor, length: int) -> dict[int, bytes]:
    end, found = cursor.at + length, {}
    while cursor.at < end:
        tag, size = cursor.take(_TL)
        found[int(tag)] = cursor.raw(int(size))
    return found


def _shape(payload: bytes | None) -> tuple[int, ...]:
    if payload is None:
        return ()
    return tuple(int(d) for d in struct.unpack(f"<{len(payload) // 8}Q", payload))


def parse_nano(header: bytes, what: str = "raw dump file") -> NanoDump:
    """The tensors a raw file's header (the bytes after its length word) describes.

    Raises:
        ValueError: not the TLV layout (no magic), a truncated or unknown field.
    """
    cursor = _Cursor(header, what)
    magic, _version = cursor.take(struct.Struct("<II"))
    if magic != NANO_MAGIC:
        raise ValueError(f"{what}: magic {magic:#x}, expected {NANO_MAGIC:#x} (not a raw dump)")
    offset = 8 + len(header)
    sides: list[list[NanoTensor]] = [[], []]
    for side, tag, layout in (
        (0, _TLV_INPUT_DESC, _INPUT_HEAD),
        (1, _TLV_OUTPUT_DESC, _OUTPUT_HEAD),
    ):
        cursor.tlv(tag)
        (count,) = cursor.take(_U32)
        for _ in range(count):
            fields = cursor.take(layout)
            code, where, size, tlv_len = fields[0], fields[2], fields[-2], fields[-1]
            if code not in _NANO_NUMPY:
                raise ValueError(f"{what}: data_type {code} is not one tf2npu reads")
            extra = _tlnvs(cursor, tlv_len)
            name = extra.get(_TLNV_ORIGIN_NAME, b"").decode("ascii", "replace")
            origin_index = fields[3] if side else -1
            sides[side].append(
                NanoTensor(
                    _NANO_NUMPY[code],
                    _shape(extra.get(_TLNV_SHAPE)),
                    offset,
                    int(size),
                    name,
                    int(origin_index),
                    where == ADDRESS_ABSENT,
                )
            )
            offset += int(size)
    return NanoDump(tuple(sides[0]), tuple(sides[1]))


def read_nano(path: str | Path) -> NanoDump:
    """The header of the raw dump file at ``path``.

    Raises:
        ValueError: not a raw dump file, or its size is not header + data (truncated).
        OSError: it cannot be read, or is no regular file (a FIFO, a device: never blocks).
    """
    with open_regular(path) as stream:
        head = stream.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: {len(head)} bytes, too short for a raw dump file")
        (length,) = struct.unpack("<Q", head)
        size = os.fstat(stream.fileno()).st_size
        if length > size - 8:
            raise ValueError(f"{path}: header length {length} exceeds the file ({size} bytes)")
        dump = parse_nano(stream.read(length), str(path))
    data = sum(t.size for t in (*dump.inputs, *dump.outputs))
    if 8 + length + data != size:
        raise ValueError(
            f"{path}: {size} bytes, but its header describes {8 + length + data}; the file is "
            "truncated or not a raw dump"
        )
    return dump


def load_nano_tensor(path: str | Path, kind: Kind, index: int) -> np.ndarray[Any, Any]:
    """Input or output ``index`` of the raw dump file at ``path``, as an array.

    Raises:
        ValueError: see :func:`read_nano`; the data does not fill the shape.
        KeyError: the file has no such tensor.
    """
    tensor = read_nano(path).tensor(kind, index)
    bf16 = tensor.dtype == "bfloat16"
    dtype = np.dtype(np.uint16 if bf16 else tensor.dtype)
    count = math.prod(tensor.shape)
    if count * dtype.itemsize > tensor.size:
        raise ValueError(
            f"{path}: {kind} {index} has shape {tensor.shape} of {tensor.dtype} "
            f"({count * dtype.itemsize} bytes) but {tensor.size} bytes of data"
        )
    with open_regular(path) as stream:
        stream.seek(tensor.offset)
        data = stream.read(count * dtype.itemsize)
    array = np.frombuffer(data, dtype, count).reshape(tensor.shape)
    if bf16:  # numpy has no bfloat16: its bits are a float32's upper half, exactly
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


@dataclass(frozen=True, slots=True)
class NpuTensor:
    """One tensor of an NPU step folder: the file's parsed name, which tensor, and its file
    (a raw device file holds all of an op's tensors; a converted one, one ``.npy`` each)."""

    name: NpuFileName
    kind: Kind
    index: int
    path: Path
    raw: bool

    def load(self) -> np.ndarray[Any, Any]:
        """The tensor's array.

        Raises:
            ValueError, KeyError, OSError: the file cannot be read (see :func:`read_nano`).
        """
        if self.raw:
            return load_nano_tensor(self.path, self.kind, self.index)
        array: np.ndarray[Any, Any] = np.load(self.path, allow_pickle=False)
        return array


def iter_npu_tensors(step: StepDir) -> Iterator[NpuTensor]:
    """Every tensor of an NPU step folder, raw and converted, by file name (a raw file in the
    protobuf layout, which needs CANN to read, gives none; an overflow record is no tensor)."""
    for name, parsed in iter_tensor_files(step):
        if not isinstance(parsed, NpuFile) or name.startswith(OPDEBUG_PREFIX):
            continue
        path = step.path / name
        if parsed.ext == "raw":
            try:
                members = list(read_nano(path).present())
            except (OSError, ValueError):
                continue
            for kind, index in members:
                yield NpuTensor(parsed.name, kind, index, path, True)
        elif parsed.kind is not None and parsed.index is not None:
            yield NpuTensor(parsed.name, parsed.kind, parsed.index, path, False)
