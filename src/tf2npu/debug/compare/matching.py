"""Which tensor of one dump tree is compared with which tensor of another (TF-free).

The first tree (``NPU_DUMP``, msaccucmp's "my output", the ``x`` of the metrics) and the second
(``GOLDEN_DUMP``, its "ground truth", ``y``) may each be an NPU tree or a golden tree
(:mod:`tf2npu.artifacts.dump` describes both). Only file names and graph JSONs are read here;
the result is a :class:`Plan` of :class:`TensorPair` s, one per CSV row, in execution order.

NPU side against golden (reference debug-tools.md §2.6, §3.5): an NPU op's output ``i`` is the
golden output named by its ``output_desc[i]`` (``_datadump_origin_name`` with ``/`` -> ``_``,
index ``_datadump_origin_output_index``); without that, output ``i`` of the op's
``_datadump_original_op_names`` (the last one first: a fusion's result is its last op's);
else output ``i`` of the op's own name. An input is the golden tensor of the output that feeds
it (through the graph JSON's ``input`` list), looking through ``Cast`` and ``TransData`` ops
that have no golden tensor of their own, as msaccucmp does.

NPU side against NPU side (fusion on vs off): both sides' tensors are named as above by the
user's op names their graph JSON gives; a tensor is compared with the other side's tensor of
the same user name and index, whatever the op that computed it is called there. Without graph
JSONs, ops are matched by their names. Golden against golden: by name and index.

Steps: numbered step folders are compared step by step (those in both trees); a tree with a
single step (or a flat folder) is compared with the other tree's single step.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import (
    GoldenFile,
    NpuFile,
    StepDir,
    find_step_dirs,
    golden_key,
    is_nano,
    iter_tensor_files,
    numpy_dtype,
    parse_npu,
    read_nano,
    sanitize,
)
from tf2npu.artifacts.gegraph import GeGraph, GeOp
from tf2npu.debug.compare.tolerance import PRECISION_BITS, coarsest
from tf2npu.errors import UsageError
from tf2npu.fs import open_regular

__all__ = [
    "INPUT_OP_TYPES",
    "PASS_THROUGH_TYPES",
    "Mode",
    "OpNode",
    "Plan",
    "TensorFile",
    "TensorPair",
    "Tree",
    "Unit",
    "load_tree",
    "plan_compare",
    "vendor_index",
]

Mode = Literal["npu-vs-golden", "golden-vs-npu", "npu-vs-npu", "golden-vs-golden"]
Kind = Literal["input", "output"]
PASS_THROUGH_TYPES = ("Cast", "TransData")
"""Op types an input is traced through when they have no counterpart of their own."""
INPUT_OP_TYPES = ("Data", "Placeholder")
"""Op types that are graph inputs (the advisor's "Input Inconsistent" check)."""
NPU_NAME = (
    "{OpType}.{op_name}.{task_id}.{stream_id}.{timestamp} (raw) or "
    "{OpType}.{op_name}.{task_id}.{stream_id}.{timestamp}.{input|output}.{i}.npy"
)
GOLDEN_NAME = "{op_name}.{output_index}.{timestamp}.npy"


@dataclass(frozen=True, slots=True)
class TensorFile:
    """One side of a pair: the file, the op names shown for it (``NPUDump``/``GroundTruth``),
    and the coarsest float dtype the graph JSON says it was computed through (numpy name)."""

    path: Path
    names: tuple[str, ...]
    carried: str | None = None
    pass_name: str = ""
    """The fusion pass that made the op this file belongs to (an NPU side's graph JSON)."""
    member: tuple[Kind, int] | None = None
    """In a raw device file (all of an op's tensors in one): which tensor; None: the file is
    the tensor's own ``.npy``."""


@dataclass(frozen=True, slots=True)
class TensorPair:
    """One CSV row: a tensor of the first tree and its counterpart in the second, if any."""

    index: int
    """``Index``: msaccucmp's, the op's fusion group counter (:func:`vendor_index`)."""
    op_type: str
    op_name: str
    tensor_index: str
    """``{op}:{input|output}:{i}``; ``NaN`` for an op that has no dump file."""
    kind: Kind | None
    slot: int
    user_names: tuple[str, ...]
    """The user's ops this tensor stands for (``--tolerance`` patterns match these)."""
    left: TensorFile | None
    right: TensorFile | None
    note: str = ""
    """Why a side is missing (goes to ``CompareFailReason``)."""


@dataclass(frozen=True, slots=True)
class OpNode:
    """An op of the first tree, for finding where outputs first diverge."""

    index: int
    name: str
    type: str
    user_names: tuple[str, ...]
    inputs: tuple[tuple[str, int] | None, ...]
    """Per data input: the producing op and its output index (None: not known)."""
    pass_name: str = ""
    """The fusion pass that made the op (the graph JSON's ``pass_name``), "" when none."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One compared model at one step (one CSV file in batch mode)."""

    step: int | None
    device_id: int | None
    model_name: str
    model_id: int | None
    folder: Path
    graph_json: Path | None
    pairs: tuple[TensorPair, ...]
    ops: tuple[OpNode, ...]
    input_nodes: tuple[str, ...]

    @property
    def label(self) -> str:
        """``{device_id}_{model_name}_{step}`` (parts that are known), msaccucmp's batch
        prefix."""
        return self.batch_label()

    def batch_label(self, *, with_model_id: bool = False) -> str:
        """:attr:`label`, with the model id after the model name when asked (two models of
        one GeOp)."""
        model_id = self.model_id if with_model_id else None
        parts = (self.device_id, self.model_name or None, model_id, self.step)
        return "_".join(str(part) for part in parts if part is not None) or "result"


@dataclass(frozen=True, slots=True)
class Plan:
    mode: Mode
    left: Path
    right: Path
    units: tuple[Unit, ...]
    notes: tuple[str, ...] = ()
    """What the plan decided that the user should know (a graph JSON given to the other side)."""


# -- trees -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tree:
    """A dump tree given on the command line: its tensor folders, by step."""

    root: Path
    what: str
    kind: Literal["npu", "golden"]
    steps: dict[int | None, list[StepDir]]


def load_tree(root: Path, what: str) -> Tree:
    """Find the tensor folders under ``root`` (named ``what`` in messages).

    Raises:
        UsageError: ``root`` is missing or a file, holds no tensor dump, holds device files
            not converted to ``.npy``, or mixes NPU and golden folders.
    """
    if not root.exists():
        raise UsageError(
            f"{what} {str(root)!r} does not exist; give the folder a dump was written to "
            "(tf2npu run --dump DIR, or the dump_path option)"
        )
    if not root.is_dir():
        raise UsageError(f"{what} {str(root)!r} is not a folder; give the folder of a dump")
    dirs = find_step_dirs(root.absolute(), f"{what} {str(root)!r}")
    with_tensors = [d for d in dirs if _has_tensors(d)]
    if not with_tensors:
        raise UsageError(f"{what} {str(root)!r}: {_why_empty(dirs)}")
    kinds = {d.kind: d for d in with_tensors}
    if len(kinds) > 1:
        raise UsageError(
            f"{what} {str(root)!r} holds NPU dump folders (e.g. {str(kinds['npu'].path)!r}) and "
            f"golden ones (e.g. {str(kinds['golden'].path)!r}); give the folder of one of them"
        )
    steps: dict[int | None, list[StepDir]] = defaultdict(list)
    for step_dir in with_tensors:
        steps[step_dir.step].append(step_dir)
    return Tree(root, what, next(iter(kinds)), dict(steps))


def _has_tensors(step: StepDir) -> bool:
    return any(_is_tensor(step.path / name, p) for name, p in iter_tensor_files(step))


def _is_tensor(path: Path, parsed: NpuFile | GoldenFile) -> bool:
    if isinstance(parsed, GoldenFile) or parsed.ext == "npy":
        return True
    return parsed.ext == "raw" and bool(_raw_members(path))


def _why_empty(dirs: list[StepDir]) -> str:
    files = [(d, name) for d in dirs for name in d.files()]
    raw = next((n for _, n in files if (p := parse_npu(n)) is not None and p.ext == "raw"), None)
    if raw is not None:
        return (
            f"its device dump files are not in the TLV layout tf2npu reads (e.g. {raw!r}: "
            "the protobuf layout, or no tensor in it); convert them first with "
            "`python3 msaccucmp.py convert -d DIR -out DIR_NPY` (the protobuf layout needs "
            "CANN's libascend_dump_parser.so) and compare DIR_NPY"
        )
    if any(name.endswith(".csv") for _, name in files):
        return (
            "it holds statistics dumps only (dump_data=stats); compare needs tensors: dump "
            "again with dump_data=tensor (the default)"
        )
    return (
        f"no dump files found; expected NPU dump files {NPU_NAME} or golden files "
        f"{GOLDEN_NAME} in it or its subfolders"
    )


def _pair_steps(left: Tree, right: Tree) -> list[tuple[list[StepDir], list[StepDir]]]:
    common = sorted(s for s in set(left.steps) & set(right.steps) if s is not None)
    if common:
        return [(left.steps[s], right.steps[s]) for s in common]
    if len(left.steps) == 1 and len(right.steps) == 1:
        return [(next(iter(left.steps.values())), next(iter(right.steps.values())))]
    raise UsageError(
        f"{left.what} holds steps {_steps(left)} and {right.what} steps {_steps(right)}: "
        "no step in common; give one step folder of each (the numbered folders)"
    )


def _steps(tree: Tree) -> str:
    return ", ".join("(unnumbered)" if s is None else str(s) for s in sorted(tree.steps, key=str))


# -- graphs ----------------------------------------------------------------------------------


def _read_graphs(path: Path, what: str) -> list[GeGraph]:
    if not path.is_file():
        raise UsageError(f"{what} {str(path)!r} is not a file; give a graph JSON file")
    try:
        return gegraph.load(path)
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"{what} {str(path)!r} cannot be read as a graph JSON ({exc}); give the "
            "ge_proto_*_Build.json of the dump (atc --mode=5 output)"
        ) from None


def _graph_for(step: StepDir, given: list[GeGraph] | None) -> tuple[GeGraph | None, Path | None]:
    graphs, path = given, None
    if graphs is None and step.graph_json is not None:
        graphs, path = _read_graphs(step.graph_json, "graph JSON"), step.graph_json
    if not graphs:
        return None, None
    named = [g for g in graphs if g.name == step.model_name]
    if named:
        return named[0], path
    if len(graphs) == 1:
        return graphs[0], path
    return GeGraph(step.model_name, tuple(op for g in graphs for op in g.ops)), path


def _data_inputs(op: GeOp) -> list[tuple[str, int]]:
    """``op``'s data inputs as (producer, output index), control edges left out."""
    found = []
    for text in op.inputs:
        name, _, index = text.rpartition(":")
        if index == "-1" or not name:
            continue
        found.append((name, int(index) if index.lstrip("-").isdigit() else 0))
    return found


def _carried(ops: Sequence[GeOp]) -> dict[tuple[str, int], str]:
    """Per output: its dtype, or for a float output the coarsest float dtype along the way."""
    carried: dict[tuple[str, int], str] = {}
    for op in sorted(ops, key=lambda o: o.id):
        # an input whose producer is not in the graph (not dumped, another model's) is taken
        # in the dtype the op's input_desc gives: a Cast back from float16 stays float16
        upstream = [
            carried.get(p)
            or (numpy_dtype(op.input_desc[i].dtype) if i < len(op.input_desc) else None)
            for i, p in enumerate(_data_inputs(op))
        ]
        for i, desc in enumerate(op.output_desc):
            own = numpy_dtype(desc.dtype)
            if own is None:
                continue
            carried[(op.name, i)] = (
                coarsest([own, *upstream]) or own if own in PRECISION_BITS else own
            )
    return carried


def _candidates(op: GeOp, index: int) -> list[tuple[str, int]]:
    """The user's (op, output) output ``index`` of ``op`` may stand for, best first."""
    found: list[tuple[str, int]] = []
    if index < len(op.output_desc) and op.output_desc[index].origin_name:
        desc = op.output_desc[index]
        origin = desc.origin_index if desc.origin_index is not None else index
        found.append((str(desc.origin_name), origin))
    elif len(op.original_op_names) == 1:
        found.append((op.original_op_names[0], index))
    # A fused op (several originals) whose output names no tensor of the user's graph carries
    # none of them (e.g. a 2-D matmul inside a 3-D dense layer, reshaped afterwards): as
    # msaccucmp does, it is matched through _datadump_origin_name only, never guessed.
    found.append((op.name, index))
    return list(dict.fromkeys(found))


# -- counterparts ----------------------------------------------------------------------------


class _Pool(Protocol):
    def find(self, names: Sequence[tuple[str, int]], shown: tuple[str, ...]) -> TensorFile | None:
        """The counterpart of the first of ``names`` (user op, output) it has."""

    def find_input(self, op_name: str, slot: int) -> TensorFile | None:
        """Input ``slot`` of the op called ``op_name`` (matching by op name)."""


class _GoldenPool:
    """Golden files of one step: ``{op}.{index}.{timestamp}.npy``, the newest of each kept."""

    def __init__(self, dirs: Iterable[StepDir]) -> None:
        newest: dict[tuple[str, int], tuple[int, Path]] = {}
        for step in dirs:
            for name, parsed in iter_tensor_files(step):
                if isinstance(parsed, GoldenFile):
                    key = (parsed.op_name, parsed.index)
                    if key not in newest or newest[key][0] <= parsed.timestamp:
                        newest[key] = (parsed.timestamp, step.path / name)
        self.files = {key: path for key, (_, path) in newest.items()}
        self.order = sorted(newest, key=lambda k: (newest[k][0], k))

    def find(self, names: Sequence[tuple[str, int]], shown: tuple[str, ...]) -> TensorFile | None:
        for name, index in names:
            path = self.files.get((golden_key(name), index))
            if path is not None:
                return TensorFile(path, shown)
        return None

    def find_input(self, op_name: str, slot: int) -> TensorFile | None:
        return None


class _NpuPool:
    """The other NPU tree's tensors of one step, by the user's names (all its models)."""

    def __init__(self, dirs: Iterable[StepDir], graphs: list[GeGraph] | None) -> None:
        self.outputs: dict[tuple[str, int], TensorFile] = {}
        self.inputs: dict[tuple[str, int], TensorFile] = {}
        for step in dirs:
            graph, _ = _graph_for(step, graphs)
            ops = _ops(graph, _npu_files(step))
            carried = _carried([op for op, _ in ops])
            for op, files in ops:
                self._add(op, files, carried)

    def _add(self, op: GeOp, files: _OpFiles | None, carried: dict[tuple[str, int], str]) -> None:
        if files is None:
            return
        for kind, slot in sorted(files.tensors):
            shown = files.file(
                (kind, slot), (op.name,), carried=carried.get((op.name, slot)),
                pass_name=op.pass_name,
            )  # fmt: skip
            if kind == "input":
                self.inputs.setdefault(
                    (sanitize(op.name), slot), dataclasses.replace(shown, carried=None)
                )
                continue
            for name, index in [*_candidates(op, slot)[:1], (op.name, slot)]:
                self.outputs.setdefault((golden_key(name), index), shown)

    def find(self, names: Sequence[tuple[str, int]], shown: tuple[str, ...]) -> TensorFile | None:
        for name, index in names:
            found = self.outputs.get((golden_key(name), index))
            if found is not None:
                return found
        return None

    def find_input(self, op_name: str, slot: int) -> TensorFile | None:
        return self.inputs.get((sanitize(op_name), slot))


# -- the NPU side ----------------------------------------------------------------------------


@dataclass(slots=True)
class _OpFiles:
    op_type: str
    task_id: int
    tensors: dict[tuple[Kind, int], Path]
    stamps: dict[tuple[Kind, int], int]
    raw: set[tuple[Kind, int]] = dataclasses.field(default_factory=set)
    """The tensors held in a raw device file (with the op's others) rather than a ``.npy``."""

    def file(self, key: tuple[Kind, int], names: tuple[str, ...], **more: Any) -> TensorFile:
        member = key if key in self.raw else None
        return TensorFile(self.tensors[key], names, member=member, **more)


def _npu_files(step: StepDir) -> dict[str, _OpFiles]:
    """Tensor files per op name (as in file names); the newest file of each tensor. A raw
    device file gives every tensor its header lists (a header that cannot be read gives output 0,
    whose load then fails with the reason)."""
    ops: dict[str, _OpFiles] = {}
    for name, parsed in iter_tensor_files(step):
        if not isinstance(parsed, NpuFile) or parsed.ext not in ("npy", "raw"):
            continue
        base = parsed.name
        files = ops.setdefault(base.op_name, _OpFiles(base.op_type, base.task_id, {}, {}))
        if parsed.ext == "raw":
            keys = _raw_members(step.path / name)
        elif parsed.kind is not None and parsed.index is not None:
            keys = [(parsed.kind, parsed.index)]
        for key in keys:
            if files.stamps.get(key, -1) <= base.timestamp:
                files.tensors[key], files.stamps[key] = step.path / name, base.timestamp
                (files.raw.add if parsed.ext == "raw" else files.raw.discard)(key)
    return ops


def _raw_members(path: Path) -> list[tuple[Kind, int]]:
    """The tensors a raw file's header lists; a file that cannot be read (damaged, cut short,
    a FIFO) stands for its op's output 0, so the comparison tries it and says why it failed
    (an ``error`` row) instead of leaving the op out as unmatched: no false pass."""
    try:
        return list(read_nano(path).present())
    except OSError:
        return [("output", 0)]
    except ValueError:  # a TLV file cut short is damaged; another layout needs converting
        try:
            with open_regular(path) as stream:
                tlv = is_nano(stream.read(12))
        except OSError:
            tlv = True
        return [("output", 0)] if tlv else []


def _ops(graph: GeGraph | None, files: dict[str, _OpFiles]) -> list[tuple[GeOp, _OpFiles | None]]:
    """The graph's ops and the dumped ops it does not know, in execution order."""
    known = list(graph.ops) if graph is not None else []
    names = {sanitize(op.name) for op in known}
    extra = [GeOp(name, f.op_type, f.task_id) for name, f in files.items() if name not in names]
    ordered = sorted([*known, *extra], key=lambda op: (op.id, op.name))
    return [(op, files.get(sanitize(op.name))) for op in ordered]


def vendor_index(ops: Sequence[GeOp]) -> dict[str, int]:
    """msaccucmp's ``Index`` of each op (26.2.0, ``fusion_rule_parser.py``): ops in graph
    order are grouped by the user op they stand for (their one ``_datadump_original_op_names``
    entry, all of them for a fused op, else their own name), and a group's number is the
    count of groups met before it; a float16 clone and its casts share their user op's.

    >>> a, b = GeOp("a", "Cast", 0), GeOp("m/_tf2npu_fp16", "MatMul", 1, original_op_names=("m",))
    >>> vendor_index([a, b, GeOp("m/_tf2npu_to_f32", "Cast", 2, original_op_names=("m",))])
    {'a': 0, 'm/_tf2npu_fp16': 1, 'm/_tf2npu_to_f32': 1}
    """
    groups: dict[tuple[str, ...], int] = {}
    found = {}
    for op in ops:
        key = tuple(op.original_op_names) or (op.name,)
        found[op.name] = groups.setdefault(key, len(groups))
    return found


class _NpuPlanner:
    """Pairs for one NPU model: every dumped tensor of every op, with its counterpart."""

    def __init__(self, graph: GeGraph | None, files: dict[str, _OpFiles], pool: _Pool) -> None:
        self.graph = graph
        self.ops = _ops(graph, files)
        self.by_name = {op.name: op for op, _ in self.ops}
        self.carried = _carried([op for op, _ in self.ops])
        self.pool = pool
        self.index = vendor_index([op for op, _ in self.ops])

    def pairs(self) -> Iterator[TensorPair]:
        for op, files in self.ops:
            if files is None:
                yield self._undumped(op)
                continue
            for kind, slot in sorted(files.tensors):
                yield self._pair(op, kind, slot, files)

    def nodes(self) -> tuple[OpNode, ...]:
        nodes = []
        for op, _ in self.ops:
            inputs: list[tuple[str, int] | None] = [
                p if p[0] in self.by_name else None for p in _data_inputs(op)
            ]
            index = self.index[op.name]
            nodes.append(OpNode(index, op.name, op.type, op.origins, tuple(inputs), op.pass_name))
        return tuple(nodes)

    def input_nodes(self) -> tuple[str, ...]:
        return tuple(op.name for op, _ in self.ops if op.type in INPUT_OP_TYPES)

    def _undumped(self, op: GeOp) -> TensorPair:
        note = (
            f'[{op.name}] There is no dump file for my output operator "{op.name}". '
            f"The type is {op.type}."
        )
        index = self.index[op.name]
        return TensorPair(index, op.type, op.name, "NaN", None, -1, op.origins, None, None, note)

    def _pair(self, op: GeOp, kind: Kind, slot: int, files: _OpFiles) -> TensorPair:
        tensor_index = f"{op.name}:{kind}:{slot}"
        if kind == "output":
            right, user = self._trace(op.name, slot)
            carried = self.carried.get((op.name, slot))
        else:
            right, user, carried = self._input_counterpart(op, slot)
        left = files.file((kind, slot), (op.name,), carried=carried)
        note = "" if right is not None else self._missing(op, kind, slot, tensor_index)
        return TensorPair(
            self.index[op.name], op.type, op.name, tensor_index, kind, slot, user, left, right, note
        )

    def _input_counterpart(
        self, op: GeOp, slot: int
    ) -> tuple[TensorFile | None, tuple[str, ...], str | None]:
        inputs = _data_inputs(op)
        own = numpy_dtype(op.input_desc[slot].dtype) if slot < len(op.input_desc) else None
        if slot >= len(inputs):
            return self.pool.find_input(op.name, slot), op.origins, own
        found, user = self._trace(*inputs[slot])
        carried = self.carried.get(inputs[slot], own)
        return found or self.pool.find_input(op.name, slot), user, carried

    def _trace(self, producer: str, index: int) -> tuple[TensorFile | None, tuple[str, ...]]:
        """The counterpart of output ``index`` of op ``producer``, looking through pass-through
        ops (a cast's output is its input in another dtype) that have none of their own."""
        while True:
            source = self.by_name.get(producer)
            if source is None:
                return self.pool.find([(producer, index)], (producer,)), (producer,)
            found = self.pool.find(_candidates(source, index), source.origins)
            upstream = _data_inputs(source)
            if found is not None or source.type not in PASS_THROUGH_TYPES or not upstream:
                return found, source.origins
            producer, index = upstream[min(index, len(upstream) - 1)]

    def _missing(self, op: GeOp, kind: Kind, slot: int, tensor_index: str) -> str:
        message = f"[{op.name}] There is no the ground truth dump file for {tensor_index}."
        if kind == "input" and self.graph is None:
            message += " (Inputs are matched through the op producing them: give -f GRAPH_JSON.)"
        return message


# -- plans -----------------------------------------------------------------------------------


def plan_compare(
    left_root: Path,
    right_root: Path,
    *,
    graph_json: Path | None = None,
    close_graph_json: Path | None = None,
) -> Plan:
    """Pair the tensors of ``left_root`` (``NPU_DUMP``) with those of ``right_root``
    (``GOLDEN_DUMP``). ``graph_json`` (``-f``) is the first tree's graph JSON and
    ``close_graph_json`` (``-cf``) the second's, when the trees do not hold their own.

    Raises:
        UsageError: a tree or graph JSON is unusable, the trees share no step, or no tensor
            of the first tree has a counterpart in the second.
    """
    left = load_tree(left_root, "NPU_DUMP")
    right = load_tree(right_root, "GOLDEN_DUMP")
    given = _read_graphs(graph_json, "-f") if graph_json is not None else None
    close = _read_graphs(close_graph_json, "-cf") if close_graph_json is not None else None
    mode = cast(Mode, f"{left.kind}-vs-{right.kind}")
    notes: tuple[str, ...] = ()
    if mode == "npu-vs-npu" and given is not None and close is not None:
        if _swap_graphs(left, right, given, close):
            given, close = close, given
            notes = (
                f"-f {str(graph_json)!r} names the ops of GOLDEN_DUMP and -cf "
                f"{str(close_graph_json)!r} those of NPU_DUMP (msaccucmp's -f is the "
                "fusions-on graph, whichever side it is): each is used for the dump it names",
            )
    units: list[Unit] = []
    for left_dirs, right_dirs in _pair_steps(left, right):
        if mode == "golden-vs-golden":
            units.append(_golden_unit(left_dirs, _GoldenPool(right_dirs)))
        elif mode == "golden-vs-npu":
            units += [
                _swapped(_npu_unit(d, close or given, _GoldenPool(_same_run(d, left_dirs))))
                for d in _by_model(right_dirs)
            ]
        else:
            for d in _by_model(left_dirs):
                others = _same_run(d, right_dirs)
                counterpart: _Pool = (
                    _NpuPool(others, close) if right.kind == "npu" else _GoldenPool(others)
                )
                units.append(_npu_unit(d, given, counterpart))
    plan = Plan(mode, left_root, right_root, tuple(units), notes)
    _check_matches(plan, left, right)
    return plan


def _swap_graphs(left: Tree, right: Tree, given: list[GeGraph], close: list[GeGraph]) -> bool:
    """Whether ``-f`` (``given``) describes the second tree and ``-cf`` (``close``) the first.

    msaccucmp reads ``-f`` as the fusions-on graph and ``-cf`` as the fusions-off one whatever
    the order of ``-m`` and ``-g`` (seed 001 gives the fusions-off dump first); the graph whose
    op names cover more of a tree's dump files is that tree's.
    """
    left_ops, right_ops = _file_ops(left), _file_ops(right)
    on, off = _graph_ops(given), _graph_ops(close)
    return len(left_ops & off) > len(left_ops & on) and len(right_ops & on) > len(right_ops & off)


def _file_ops(tree: Tree) -> set[str]:
    """The op names (as in file names) of a tree's first step, every model's folder of it."""
    for dirs in tree.steps.values():
        return {name for step in dirs for name in _npu_files(step)}
    return set()


def _graph_ops(graphs: list[GeGraph]) -> set[str]:
    return {sanitize(op.name) for graph in graphs for op in graph.ops}


def _same_run(step: StepDir, others: list[StepDir]) -> list[StepDir]:
    """The folders of ``others`` from the same run signature as ``step``, else all of them.

    tf2npu numbers each run signature of a process (the NPU model id, the golden ``<run>``
    folder) the same way in an NPU and a ``--no-npu`` run of one script, so a training step is
    never compared with an evaluation or re-initialisation run of the same step number. Dumps
    numbered otherwise (a real device's model ids) fall back to every folder of the step.
    """
    same = [d for d in others if d.model_id is not None and d.model_id == step.model_id]
    return same or others


def _by_model(dirs: list[StepDir]) -> list[StepDir]:
    """Model folders in the order the models were made (model id), then by path."""
    return sorted(dirs, key=lambda d: (d.model_id is None, d.model_id or 0, str(d.path)))


def _npu_unit(step: StepDir, given: list[GeGraph] | None, pool: _Pool) -> Unit:
    graph, path = _graph_for(step, given)
    planner = _NpuPlanner(graph, _npu_files(step), pool)
    return Unit(
        step.step, step.device_id, step.model_name, step.model_id, step.path, path,
        tuple(planner.pairs()), planner.nodes(), planner.input_nodes(),
    )  # fmt: skip


def _swapped(unit: Unit) -> Unit:
    """An NPU model planned against a golden tree, with the golden side first."""
    return dataclasses.replace(unit, pairs=tuple(_swap(pair) for pair in unit.pairs))


def _swap(pair: TensorPair) -> TensorPair:
    note = pair.note
    if pair.left is not None and pair.right is None:
        note = f"[{pair.op_name}] There is no NPU_DUMP file for {pair.tensor_index}."
    return dataclasses.replace(pair, left=pair.right, right=pair.left, note=note)


def _golden_unit(dirs: list[StepDir], pool: _GoldenPool) -> Unit:
    mine = _GoldenPool(dirs)
    ops: dict[str, int] = {}
    pairs = []
    for key, index in mine.order:
        number = ops.setdefault(key, len(ops))
        left = TensorFile(mine.files[(key, index)], (key,))
        right = pool.find([(key, index)], (key,))
        tensor_index = f"{key}:output:{index}"
        note = (
            "" if right else f"[{key}] There is no the ground truth dump file for {tensor_index}."
        )
        pairs.append(
            TensorPair(number, "NaN", key, tensor_index, "output", index, (key,), left, right, note)
        )
    nodes = tuple(OpNode(n, key, "NaN", (key,), ()) for key, n in ops.items())
    step = dirs[0]
    return Unit(step.step, None, "", None, step.path, None, tuple(pairs), nodes, ())


def _check_matches(plan: Plan, left: Tree, right: Tree) -> None:
    if any(p.left is not None and p.right is not None for u in plan.units for p in u.pairs):
        return
    tensors = sum(1 for u in plan.units for p in u.pairs if p.left or p.right)
    hint = {
        "npu-vs-golden": "check that GOLDEN_DUMP is a golden dump of the same script "
        "(tf2npu run --no-npu --dump DIR) and that the graph JSON (-f) belongs to NPU_DUMP",
        "golden-vs-npu": "check that both dumps come from the same script and that the graph "
        "JSON belongs to the NPU dump",
        "npu-vs-npu": "check that both dumps come from the same script; the graph JSONs "
        "(found in the trees, or -f and -cf) name the user's ops the tensors stand for",
        "golden-vs-golden": "golden files are matched by op name and output index",
    }[plan.mode]
    raise UsageError(
        f"no tensor of {left.what} {str(left.root)!r} ({tensors} tensors) has a counterpart in "
        f"{right.what} {str(right.root)!r}; {hint}"
    )
