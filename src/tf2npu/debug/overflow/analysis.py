"""Find the first overflowing ops of an overflow dump and say how to fix them (TF-free).

The vendor's rule (precision_tool ``ac``, msaccucmp ``overflow``): list every ``Opdebug`` record
under the dump, order them by the timestamp in their file names, and read the first N: the
first overflow in execution order is the one to fix, later ones usually follow from it. For each
record this module reads the op's input and output dump files (same folder, same task and
stream id, the earliest timestamp), one file at a time, maps the op to the user's graph through
the model's graph JSON and the record's own fields, and proposes the fix: move the op type to
float32 with a ``modify_mixlist`` black list, or keep the user's op in its dtype with
``npu_scope.keep_dtype_scope()``.

Usage (``tests/debug/overflow/test_analysis.py`` builds such trees)::

    report = analyse("ovf", limit=1)
    report.overflows[0].fix.black_list          # ('MatMul',)

Views of the result (summary file, mixlist, JSON) live in :mod:`tf2npu.debug.overflow.report`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import (
    Kind,
    TensorStats,
    ge_dtype,
    load_nano_tensor,
    parse_golden,
    parse_npu,
    read_nano,
    sanitize,
    tensor_stats,
)
from tf2npu.artifacts.dump import graph_json_of as dump_graph_json_of
from tf2npu.artifacts.gegraph import GeGraph, GeOp
from tf2npu.debug.overflow.fix import Fix, propose_fix
from tf2npu.debug.overflow.opdebug import (
    OpdebugName,
    OpdebugRecord,
    load_record,
    parse_opdebug_name,
)
from tf2npu.fs import open_regular, walk

__all__ = [
    "FLOAT16_MAX",
    "DataFile",
    "GraphNode",
    "Overflow",
    "OverflowReport",
    "Scan",
    "TensorSummary",
    "analyse",
    "scan",
]

FLOAT16_MAX = 65504.0
"""The largest finite float16; a saturating device writes it where the value overflowed."""

UNNAMED = "(op name not recorded)"
"""The op name shown when neither the record, the graph JSON nor a data file names the op."""

# -- finding records --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scan:
    """What a dump tree holds: the records, raw and converted (in the vendor's order), and a
    count of what cannot be read as an overflow dump."""

    records: tuple[tuple[Path, OpdebugName], ...]
    """Sorted by the timestamp in the file name, then by path. A record found both raw and
    converted (``msaccucmp.py convert`` output in the same tree) is listed once, raw."""
    raw_records: int
    """How many of them are the device's raw files."""
    tensor_files: int
    """Other dump files (tensors, statistics, golden)."""


def scan(root: str | Path) -> Scan:
    """Every Opdebug record under ``root``, at any depth (precision_tool keeps them in
    ``precision_data/overflow/dump``)."""
    found: dict[tuple[int, int | None, int], tuple[Path, OpdebugName]] = {}
    tensors = 0
    for directory, _subdirs, names in walk(root, f"DUMP_DIR {str(root)!r}"):
        for filename in names:
            name = parse_opdebug_name(filename)
            if name is not None:
                seen = found.get(name.key)
                if seen is None or (name.raw and not seen[1].raw):
                    found[name.key] = (Path(directory, filename), name)
            elif parse_npu(filename) or parse_golden(filename):
                tensors += 1
    records = sorted(found.values(), key=lambda item: (item[1].timestamp, str(item[0])))
    return Scan(tuple(records), sum(name.raw for _, name in records), tensors)


# -- the op's dump files ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DataFile:
    """One input or output ``.npy`` of an op, as named in an NPU dump."""

    filename: str
    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp: int
    kind: Kind
    index: int
    raw: bool = False
    """The tensor is one of several in a raw device file (not its own ``.npy``)."""


def data_files(folder: Path, names: Iterable[str]) -> list[DataFile]:
    """The op tensors of ``folder``'s files ``names``: one per converted ``.npy``, one per
    tensor a raw device file's header lists (a raw file that cannot be read gives none)."""
    found = []
    for name in names:
        data = parse_data_file(name)
        if data is not None:
            found.append(data)
            continue
        parsed = parse_npu(name)
        if parsed is None or parsed.ext != "raw" or parsed.name.op_type == "Opdebug":
            continue
        try:
            members = list(read_nano(folder / name).present())
        except (OSError, ValueError):
            continue
        n = parsed.name
        found.extend(
            DataFile(name, n.op_type, n.op_name, n.task_id, n.stream_id, n.timestamp, kind, i, True)
            for kind, i in members
        )
    return found


def parse_data_file(filename: str) -> DataFile | None:
    """``filename`` as an op's tensor file (tf2npu's names or msaccucmp ``convert``'s, read by
    :func:`tf2npu.artifacts.dump.parse_npu`)."""
    parsed = parse_npu(filename)
    if parsed is None or parsed.kind is None or parsed.index is None:
        return None
    n = parsed.name
    if n.op_type == "Opdebug":
        return None
    return DataFile(
        filename, n.op_type, n.op_name, n.task_id, n.stream_id, n.timestamp, parsed.kind,
        parsed.index,
    )  # fmt: skip


def op_files(files: list[DataFile], task_id: int, stream_id: int | None) -> list[DataFile]:
    """The files of the op with ``task_id``/``stream_id`` (either stream id unknown: any), of
    its earliest dump (the vendor's rule), inputs first, by index."""
    mine = [
        f
        for f in files
        if f.task_id == task_id
        and (stream_id is None or f.stream_id is None or f.stream_id == stream_id)
    ]
    if not mine:
        return []
    first = min(mine, key=lambda f: (f.timestamp, f.op_name))
    same = [
        f
        for f in mine
        if (f.timestamp, f.op_type, f.op_name) == (first.timestamp, first.op_type, first.op_name)
    ]
    return sorted(same, key=lambda f: (f.kind != "input", f.index))


@dataclass(frozen=True, slots=True)
class TensorSummary:
    """``[Shape][Dtype][Max][Min][Mean]`` of one tensor, as the vendor tools print them (over
    all elements: an Inf makes Max ``inf``, a NaN makes all three ``nan``), plus counts."""

    kind: Kind
    index: int
    filename: str
    shape: tuple[int, ...]
    dtype: str
    """numpy name: ``float16``."""
    max: float
    min: float
    mean: float
    nan: int
    pos_inf: int
    neg_inf: int
    saturated: int
    """float16 elements at ±65504 (where a saturating device clips an overflow)."""

    @property
    def finite(self) -> bool:
        return self.nan + self.pos_inf + self.neg_inf == 0


def summarize_tensor(path: Path, kind: Kind, index: int, *, raw: bool = False) -> TensorSummary:
    """Read one ``.npy`` (memory-mapped), or input/output ``index`` of a raw device file, and
    summarise it.

    Raises:
        ValueError, OSError: the file is not a readable ``.npy`` or raw file (or not a regular
            file).
        KeyError: the raw file has no such tensor.
    """
    open_regular(path).close()  # a FIFO would block np.load, /dev/zero never end
    if raw:
        array = load_nano_tensor(path, kind, index)
    else:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    stats = tensor_stats(kind, index, array)
    saturated = 0
    if array.dtype == np.float16:
        saturated = int(np.count_nonzero(np.abs(np.asarray(array)) == np.float16(FLOAT16_MAX)))
    high, low, mean = _over_all_elements(stats)
    return TensorSummary(
        kind, index, path.name, stats.shape, array.dtype.name, high, low, mean, stats.nan,
        stats.pos_inf, stats.neg_inf, saturated,
    )  # fmt: skip


def _over_all_elements(stats: TensorStats) -> tuple[float, float, float]:
    """Max, min, mean over every element (``tensor_stats`` gives them over the finite ones)."""
    nan, inf = float("nan"), float("inf")
    if stats.nan or stats.count == 0:
        return nan, nan, nan
    any_finite = stats.count > stats.pos_inf + stats.neg_inf
    high = inf if stats.pos_inf else (stats.max if any_finite else -inf)
    low = -inf if stats.neg_inf else (stats.min if any_finite else inf)
    if stats.pos_inf and stats.neg_inf:
        return high, low, nan
    mean = inf if stats.pos_inf else (-inf if stats.neg_inf else stats.mean)
    return high, low, mean


# -- the user's graph -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GraphNode:
    """The overflowing op in its model's graph JSON, and what it stands for."""

    model: str
    op: GeOp
    consumers: tuple[GeOp, ...]
    """The ops that read its outputs (used to fix an overflowing Cast)."""
    graph_json: Path

    @property
    def output_origins(self) -> tuple[str, ...]:
        """The user's tensors its outputs carry, ``op:index``."""
        return tuple(
            f"{d.origin_name}:{d.origin_index or 0}"
            for d in self.op.output_desc
            if d.origin_name is not None
        )


def graph_json_of(folder: Path) -> Path | None:
    """The graph JSON of the model a step folder belongs to
    (:func:`tf2npu.artifacts.dump.graph_json_of`)."""
    return dump_graph_json_of(folder)


def find_node(
    graphs: list[GeGraph], model: str, names: tuple[str, ...], task_id: int
) -> tuple[GeGraph, GeOp] | None:
    """The op of the model named ``model`` (the only graph when none is so named) whose
    sanitized name is one of ``names``; only when no name is known, the op whose id is
    ``task_id`` (a name that matches nothing is not replaced by a guess)."""
    graph = next((g for g in graphs if g.name == model), graphs[0] if len(graphs) == 1 else None)
    if graph is None:
        return None
    wanted = {sanitize(name) for name in names if name}
    if wanted:
        op = next((op for op in graph.ops if sanitize(op.name) in wanted), None)
    else:
        op = next((op for op in graph.ops if op.id == task_id), None)
    return None if op is None else (graph, op)


def consumers_of(graph: GeGraph, op: GeOp) -> tuple[GeOp, ...]:
    """The ops of ``graph`` with a data input from ``op``."""
    prefix = f"{op.name}:"
    return tuple(
        other
        for other in graph.ops
        if any(src.startswith(prefix) and not src.endswith(":-1") for src in other.inputs)
    )


# -- one overflow -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Overflow:
    """One overflowing op: its record, tensors, place in the user's graph and the fix."""

    record: OpdebugRecord
    op_type: str
    op_name: str
    tensors: tuple[TensorSummary, ...]
    node: GraphNode | None
    user_ops: tuple[str, ...]
    """The user's ops it stands for (the record's ``origin``, else the graph JSON's)."""
    created_at: str
    dtype: str
    """GE name of its output dtype (``DT_FLOAT16``), ``""`` when nothing says."""
    fix: Fix
    notes: tuple[str, ...] = ()
    """What could not be found (data files, graph JSON), so the reader knows what is missing."""


@dataclass(frozen=True, slots=True)
class OverflowReport:
    """The first overflows of a dump tree, in execution order."""

    root: Path
    records: int
    """Opdebug records in the tree."""
    overflows: tuple[Overflow, ...]
    skipped: int = 0
    """Records read whose status shows no overflow (every unit's status is 0)."""
    raw_records: int = 0
    """How many records are the device's raw files (the others: msaccucmp's JSON)."""
    tensor_files: int = 0
    """Other dump files in the tree (tensors, statistics, golden)."""

    @property
    def black_list(self) -> tuple[str, ...]:
        """The op types all fixes move to float32, in order, once each."""
        return tuple(dict.fromkeys(t for o in self.overflows for t in o.fix.black_list))


@dataclass
class _Context:
    """Caches while reading one tree: each folder is listed, each graph JSON read, once."""

    files: dict[Path, list[DataFile]] = field(default_factory=dict)
    graphs: dict[Path, list[GeGraph] | str] = field(default_factory=dict)

    def data_files(self, folder: Path) -> list[DataFile]:
        if folder not in self.files:
            self.files[folder] = data_files(folder, sorted(os.listdir(folder)))
        return self.files[folder]

    def graph(self, path: Path) -> list[GeGraph] | str:
        """The graphs of ``path``, or why they cannot be read."""
        if path not in self.graphs:
            try:
                self.graphs[path] = gegraph.load(path)
            except (OSError, ValueError) as exc:
                self.graphs[path] = str(exc)
        return self.graphs[path]


def analyse(root: str | Path, limit: int = 1) -> OverflowReport:
    """The first ``limit`` overflows under ``root`` (records with no overflowing unit are
    skipped and counted).

    Raises:
        UsageError: a record in the first ``limit`` is broken (the message names the file).
        ValueError: ``limit`` < 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    found = scan(root)
    context = _Context()
    overflows: list[Overflow] = []
    skipped = 0
    for record in _records(found):
        if not record.overflowed:
            skipped += 1
            continue
        overflows.append(_overflow(record, context))
        if len(overflows) == limit:
            break
    return OverflowReport(
        Path(root), len(found.records), tuple(overflows), skipped, found.raw_records,
        found.tensor_files,
    )  # fmt: skip


def _records(found: Scan) -> Iterator[OpdebugRecord]:
    for path, name in found.records:
        yield load_record(path, name)


def _overflow(record: OpdebugRecord, context: _Context) -> Overflow:
    folder = record.path.parent
    notes: list[str] = []
    files = op_files(context.data_files(folder), record.task_id, record.stream_id)
    if not files:
        notes.append(
            f"no dump files of task {record.task_id} stream {_stream(record.stream_id)} in "
            f"{folder}: only the record was kept"
        )
    tensors = tuple(_tensors(folder, files, notes))
    node = _node(record, files, context, notes)
    # the record knows best, then the graph JSON, then the data file names
    op_type = record.op_type or (node.op.type if node else "") or _first(files, "op_type")
    op_name = record.op_name or (node.op.name if node else "") or _first(files, "op_name")
    user_ops = record.origin or (node.op.origins if node else ())
    dtype = record.dtype or _output_dtype(tensors, node)
    fix = propose_fix(
        op_type,
        dtype,
        node.op if node else None,
        node.consumers if node else (),
        user_ops,
        record.created_at,
    )
    return Overflow(
        record, op_type or "?", op_name or UNNAMED, tensors, node, user_ops, record.created_at,
        dtype, fix, tuple(notes),
    )  # fmt: skip


def _first(files: list[DataFile], attribute: str) -> str:
    return str(getattr(files[0], attribute)) if files else ""


def _stream(stream_id: int | None) -> str:
    return "?" if stream_id is None else str(stream_id)


def _tensors(folder: Path, files: list[DataFile], notes: list[str]) -> Iterator[TensorSummary]:
    for data in files:
        try:
            yield summarize_tensor(folder / data.filename, data.kind, data.index, raw=data.raw)
        except (OSError, ValueError, KeyError) as exc:
            form = f"{data.kind} {data.index} of a raw dump file" if data.raw else ".npy"
            notes.append(f"{data.filename} cannot be read as {form}: {exc}")


def _node(
    record: OpdebugRecord, files: list[DataFile], context: _Context, notes: list[str]
) -> GraphNode | None:
    folder = record.path.parent
    path = graph_json_of(folder)
    if path is None:
        notes.append(f"no graph JSON (ge_proto_*_Build.json) beside {folder}")
        return None
    graphs = context.graph(path)
    if isinstance(graphs, str):
        notes.append(f"graph JSON unreadable: {graphs}")
        return None
    model = folder.parent.parent.name if folder.parent.name.isdigit() else ""
    names = (record.op_name, *(f.op_name for f in files[:1]))
    found = find_node(graphs, model, names, record.task_id)
    if found is None:
        what = ", ".join(repr(n) for n in dict.fromkeys(filter(None, names)))
        notes.append(f"no op {what or f'with id {record.task_id}'} in model {model!r} of {path}")
        return None
    graph, op = found
    return GraphNode(graph.name, op, consumers_of(graph, op), path)


def _output_dtype(tensors: tuple[TensorSummary, ...], node: GraphNode | None) -> str:
    output = next((t for t in tensors if t.kind == "output"), None)
    if output is not None:
        return ge_dtype(output.dtype)
    if node is not None and node.op.output_desc:
        return node.op.output_desc[0].dtype
    return ""
