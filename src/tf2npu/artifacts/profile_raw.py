"""A profile's raw data: what each op is, and when it ran in each traced run (TF-free).

The run instrument (:mod:`tf2npu.runtime.profile`) writes this while the script runs; every
table, the timeline, the advice and the page are computed from it afterwards
(:func:`tf2npu.debug.profile.report.analyse`), so a profile folder can be analysed again offline
(``tf2npu profile --from DIR``). The layout is msprof's (:mod:`tf2npu.artifacts.profile`, its one
home): ``PROF_<pid>_<time>_<id>/device_<n>/data/`` holds the raw files, ``device_<n>/info.json.<n>``
the device facts, ``mindstudio_profiler_output/`` the tables.

Raw files (JSON lines, appended as the run goes, so a crashed run leaves what it traced):

* ``ops.jsonl``: one :class:`OpFacts` per op of the executed graph the first time a traced run
  executes it: its type, GE type, GeOp (``""``: a host op), the user's ops it stands for, its
  source line, the precision decision and the fusion rule that made it, its inputs;
* ``iterations.jsonl``: one :class:`Iteration` per traced run: the run signature (model) and the
  run's index in it, whether it is a training step, and per executed op its start, duration,
  thread and output shapes/dtypes/bytes;
* ``compiles.jsonl``: one :class:`CompileRecord` per engine compile (the engine's info
  diagnostics, e.g. ``fusion_rule_switched_off``);
* ``meta.json``: the profiling options, the device id, the session options that matter to the
  advice (precision mode, ``modify_mixlist``) and, per model, how often it was planned.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tf2npu.artifacts.profile import (
    COMPILES,
    DATA_DIR,
    ITERATIONS,
    META,
    OPS,
    OUTPUT_DIR,
    PROF_PREFIX,
    device_dir,
    info_json,
    info_name,
    table_stamp,
)
from tf2npu.atomic import write_text_atomic
from tf2npu.config.jsonfile import parse_json, short_repr
from tf2npu.errors import ConfigError
from tf2npu.fs import read_regular

__all__ = [
    "COMPILES",
    "DATA_DIR",
    "ITERATIONS",
    "META",
    "OPS",
    "OUTPUT_DIR",
    "CompileRecord",
    "Iteration",
    "ModelInfo",
    "OpFacts",
    "OpRun",
    "RawProfile",
    "RawWriter",
    "find_profiles",
    "load",
]


HOST = ""
"""The GeOp of a host op."""


@dataclass(frozen=True, slots=True)
class OpFacts:
    """One op of the executed graph, as the engine decided it."""

    name: str
    """The name it runs under (the engine's name for a node a pass made)."""
    type: str
    """The TensorFlow op type executed."""
    ge_type: str = ""
    """The GE op type the device would run (``ReduceSumD`` for ``Sum``); "" = ``type``."""
    geop: str = HOST
    """The GeOp holding it; ``""`` for a host op."""
    origin: tuple[str, ...] = ()
    """The user's ops it stands for (empty: it is the user's own op, ``name``)."""
    where: str = ""
    """``file:line in function`` where the user's script created it (or its first origin)."""
    precision: str = ""
    """``float32->float16`` when the precision pass changed its dtype, else ""."""
    precision_reason: str = ""
    """The precision decision's reason (``allow_list: MatMul is in the allow list``)."""
    fused_by: str = ""
    """The fusion rule that made it ("" when none)."""
    host_reason: str = ""
    """Why it runs on the host (a placement reason slug; "" for device ops)."""
    host_message: str = ""
    """The placement's sentence for a host op."""
    order: int = 0
    """Its position in the executed graph's creation order (the fp/bp choice reads it)."""
    inputs: tuple[str, ...] = ()
    """Data inputs as ``node:index``."""
    input_dtypes: tuple[str, ...] = ()
    """GE dtype names (``DT_FLOAT16``) of the inputs."""
    input_shapes: tuple[tuple[int, ...] | None, ...] = ()
    """Static shapes of the inputs (None: unknown rank; -1: unknown dimension)."""
    ai_core: bool = True
    """For a device op: whether the device has an AI Core kernel for it in these dtypes (else
    it runs on the device's AI CPU)."""
    kind: str = "op"
    """``op``, or ``feed`` / ``fetch`` for the session's argument and return nodes."""
    tensor: str = ""
    """For a feed or fetch node: the tensor it feeds or fetches."""
    session: int = 0
    """The session whose graph holds it (two sessions' graphs may use the same names)."""

    @property
    def on_device(self) -> bool:
        return bool(self.geop)

    @property
    def origins(self) -> tuple[str, ...]:
        return self.origin or (self.name,)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["input_shapes"] = [None if s is None else list(s) for s in self.input_shapes]
        kept = ("name", "session")
        return {k: v for k, v in data.items() if v not in ("", (), [], None) or k in kept}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OpFacts:
        return cls(
            name=str(data["name"]),
            type=str(data.get("type", "")),
            ge_type=str(data.get("ge_type", "")),
            geop=str(data.get("geop", "")),
            origin=tuple(data.get("origin", ())),
            where=str(data.get("where", "")),
            precision=str(data.get("precision", "")),
            precision_reason=str(data.get("precision_reason", "")),
            fused_by=str(data.get("fused_by", "")),
            host_reason=str(data.get("host_reason", "")),
            host_message=str(data.get("host_message", "")),
            order=int(data.get("order", 0)),
            inputs=tuple(data.get("inputs", ())),
            input_dtypes=tuple(data.get("input_dtypes", ())),
            input_shapes=tuple(
                None if s is None else tuple(int(d) for d in s)
                for s in data.get("input_shapes", ())
            ),
            ai_core=bool(data.get("ai_core", True)),
            kind=str(data.get("kind", "op")),
            tensor=str(data.get("tensor", "")),
            session=int(data.get("session", 0)),
        )


@dataclass(frozen=True, slots=True)
class OpRun:
    """One op's execution in a traced run (TensorFlow's ``NodeExecStats``)."""

    name: str
    start_ns: int
    """Wall clock, nanoseconds since the epoch."""
    duration_ns: int
    thread: int = 0
    output_shapes: tuple[tuple[int, ...], ...] = ()
    output_dtypes: tuple[str, ...] = ()
    output_bytes: tuple[int, ...] = ()

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns

    def to_json(self) -> list[Any]:
        shapes = [list(s) for s in self.output_shapes]
        return [
            self.name, self.start_ns, self.duration_ns, self.thread, shapes,
            list(self.output_dtypes), list(self.output_bytes),
        ]  # fmt: skip

    @classmethod
    def from_json(cls, row: Sequence[Any]) -> OpRun:
        name, start, duration, thread, shapes, dtypes, nbytes = row
        return cls(
            str(name),
            int(start),
            int(duration),
            int(thread),
            tuple(tuple(int(d) for d in s) for s in shapes),
            tuple(str(d) for d in dtypes),
            tuple(int(b) for b in nbytes),
        )


@dataclass(frozen=True)
class Iteration:
    """One traced run: run signature (model) ``model``, its ``index``-th run (0-based)."""

    model: int
    index: int
    train: bool
    ops: tuple[OpRun, ...]
    gap_ns: int = -1
    """The script's own time between the previous run of the signature handing its values
    back and this run being asked for (-1: no previous run). The profiler's work and
    TensorFlow's trace collection fall outside it."""

    @property
    def start_ns(self) -> int:
        return min((op.start_ns for op in self.ops), default=0)

    @property
    def end_ns(self) -> int:
        return max((op.end_ns for op in self.ops), default=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "index": self.index,
            "train": self.train,
            "ops": [op.to_json() for op in self.ops],
            "gap_ns": self.gap_ns,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Iteration:
        return cls(
            int(data["model"]),
            int(data["index"]),
            bool(data.get("train", False)),
            tuple(OpRun.from_json(row) for row in data.get("ops", ())),
            int(data.get("gap_ns", -1)),
        )


@dataclass(frozen=True)
class CompileRecord:
    """One engine compile of a session's graph, with the engine's info diagnostics."""

    graph_num: int
    session: int
    geops: int = 0
    diagnostics: tuple[Mapping[str, str], ...] = ()
    """``{code, node, message, fix, where}`` of each info/warning diagnostic."""

    def to_json(self) -> dict[str, Any]:
        return {
            "graph_num": self.graph_num,
            "session": self.session,
            "geops": self.geops,
            "diagnostics": [dict(d) for d in self.diagnostics],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompileRecord:
        return cls(
            int(data["graph_num"]),
            int(data.get("session", 0)),
            int(data.get("geops", 0)),
            tuple(dict(d) for d in data.get("diagnostics", ())),
        )


@dataclass
class ModelInfo:
    """One run signature (msprof's model): its number, session, and how often it was planned
    (more than once: the session's graph was compiled again while the signature ran)."""

    number: int
    session: int = 0
    train: bool = False
    plans: int = 1
    runs: int = 0
    fetches: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"fetches": list(self.fetches)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelInfo:
        return cls(
            int(data["number"]),
            int(data.get("session", 0)),
            bool(data.get("train", False)),
            int(data.get("plans", 1)),
            int(data.get("runs", 0)),
            tuple(data.get("fetches", ())),
        )


@dataclass
class RawProfile:
    """Everything one profile folder holds, read back."""

    directory: Path
    device_id: int = 0
    spec: Mapping[str, Any] = field(default_factory=dict)
    """The profiling options as :meth:`tf2npu.config.profiling.ProfilingSpec.to_json` gives."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Session options the advice reads: ``precision_mode``, ``modify_mixlist``, ..."""
    ops: dict[int, dict[str, OpFacts]] = field(default_factory=dict)
    """Session -> op name -> its facts."""
    iterations: list[Iteration] = field(default_factory=list)
    models: dict[int, ModelInfo] = field(default_factory=dict)
    compiles: list[CompileRecord] = field(default_factory=list)
    timestamp: str = ""
    """The 14-digit ``<time>`` (``%Y%m%d%H%M%S``) of the table file names."""

    @property
    def output_dir(self) -> Path:
        return self.directory / OUTPUT_DIR

    def facts_of(self, model: int) -> Mapping[str, OpFacts]:
        """The ops of the session that ran ``model`` (signature), by name."""
        info = self.models.get(model)
        session = info.session if info is not None else next(iter(self.ops), 0)
        return self.ops.get(session, {})

    def all_facts(self) -> Iterator[OpFacts]:
        for ops in self.ops.values():
            yield from ops.values()


class RawWriter:
    """Appends a profile's raw files (one writer per profile folder, any thread)."""

    def __init__(self, directory: Path, device_id: int, rank_id: int | None = None) -> None:
        self.directory = directory
        device = directory / device_dir(device_id)
        self.data = device / DATA_DIR
        self.data.mkdir(parents=True, exist_ok=True)
        info = json.dumps(info_json(device_id, rank_id), indent=1) + "\n"
        write_text_atomic(device / info_name(device_id), info)
        self._files: dict[str, Any] = {}

    def add_ops(self, ops: Iterable[OpFacts]) -> None:
        self._append(OPS, (op.to_json() for op in ops))

    def add_iteration(self, iteration: Iteration) -> None:
        self._append(ITERATIONS, [iteration.to_json()])

    def add_compile(self, record: CompileRecord) -> None:
        self._append(COMPILES, [record.to_json()])

    def write_meta(self, meta: Mapping[str, Any]) -> None:
        write_text_atomic(self.data / META, json.dumps(meta, indent=1) + "\n")

    def flush(self) -> None:
        for handle in self._files.values():
            handle.flush()

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()

    def _append(self, name: str, items: Iterable[Any]) -> None:
        handle = self._files.get(name)
        if handle is None:
            handle = self._files[name] = open(self.data / name, "a", encoding="utf-8")  # noqa: SIM115
        handle.writelines(json.dumps(item, separators=(",", ":")) + "\n" for item in items)


def find_profiles(path: str | Path) -> list[Path]:
    """The ``PROF_*`` folders at ``path``: itself when it is one, else those inside it, sorted.

    Raises:
        ValueError: ``path`` holds no profile (the message names it).
    """
    root = Path(path)
    if root.name.startswith(PROF_PREFIX) and any(root.glob(f"device_*/{DATA_DIR}/{META}")):
        return [root]
    found = sorted(p for p in root.glob(f"{PROF_PREFIX}*") if any(p.glob(f"device_*/{DATA_DIR}")))
    if not found:
        raise ValueError(
            f"{os.fspath(root)} holds no profile (no PROF_*/device_*/data folder); give the "
            "folder a profiled run wrote (profiling_options output, tf2npu run --profile DIR)"
        )
    return found


def load(directory: str | Path) -> RawProfile:
    """Read one ``PROF_<time>`` folder's raw files.

    Raises:
        ValueError: a file is not what the profiler writes (the message names the file).
    """
    root = Path(directory)
    data_dirs = sorted(root.glob(f"device_*/{DATA_DIR}"))
    if not data_dirs:
        raise ValueError(f"{os.fspath(root)}: no device_*/data folder; not a profile folder")
    data = data_dirs[0]
    meta = _read_json(data / META) if (data / META).exists() else {}
    try:
        return _profile(root, data, meta)
    except (TypeError, AttributeError, KeyError) as err:  # JSON of another shape
        raise ValueError(
            f"{os.fspath(data)}: a file holds JSON of another shape than the profiler writes "
            f"({type(err).__name__}: {err}); profile the run again"
        ) from None


def _profile(root: Path, data: Path, meta: dict[str, Any]) -> RawProfile:
    profile = RawProfile(
        directory=root,
        device_id=int(meta.get("device_id", 0)),
        spec=meta.get("spec", {}),
        options=meta.get("options", {}),
        models={int(k): ModelInfo.from_json(v) for k, v in meta.get("models", {}).items()},
        timestamp=str(meta.get("timestamp") or table_stamp(root.name)),
    )
    for item in _lines(data / OPS):
        op = OpFacts.from_json(item)
        profile.ops.setdefault(op.session, {})[op.name] = op
    profile.iterations = [Iteration.from_json(item) for item in _lines(data / ITERATIONS)]
    profile.compiles = [CompileRecord.from_json(item) for item in _lines(data / COMPILES)]
    return profile


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = parse_json(read_regular(path).decode("utf-8"), str(path))
    except (OSError, ConfigError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: cannot read it as JSON ({err})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: not a JSON object")
    return value


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file (none when it is absent); a last line cut short by
    a crash is skipped."""
    if not path.exists():
        return
    try:
        lines = read_regular(path).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: cannot read it ({err})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            if number == len(lines):
                return
            raise ValueError(f"{path}:{number}: not a JSON line") from None
        if not isinstance(item, dict):
            raise ValueError(f"{path}:{number}: not a JSON object ({short_repr(item)})")
        yield item
