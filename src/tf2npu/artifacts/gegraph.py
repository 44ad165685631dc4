"""The graph JSON of a dumped model, in the shape ``atc --mode=5`` writes (TF-free).

msaccucmp's ``-f`` and precision_tool read this file to map each device op back to the user's
ops: a fused op lists the original ops it replaces (``_datadump_original_op_names``) and the
pass that made it (``pass_name``); each output names the original tensor it carries
(``_datadump_origin_name`` / ``_datadump_origin_output_index`` on its ``output_desc``).

>>> op = GeOp("dense/fused", "FusedMatMul", 0, ("x:0", "w:0"),
...           output_desc=(TensorDesc("DT_FLOAT", (2, 3), "dense/BiasAdd", 0),),
...           original_op_names=("dense/MatMul", "dense/BiasAdd"),
...           pass_name="MatMulBiasAddFusionPass")
>>> [g.ops[0] == op for g in from_json(GeGraph("GeOp1_0", (op,)).to_json())]
[True]
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tf2npu.atomic import write_text_atomic
from tf2npu.config.jsonfile import parse_json
from tf2npu.errors import ConfigError
from tf2npu.fs import read_regular

__all__ = [
    "BUILD_GRAPH",
    "GeGraph",
    "GeOp",
    "TensorDesc",
    "destinations",
    "dump",
    "dump_build",
    "from_json",
    "load",
    "proto_text",
    "with_data_inputs",
]

ORIGINAL_OP_NAMES = "_datadump_original_op_names"
PASS_NAME = "pass_name"
ORIGIN_NAME = "_datadump_origin_name"
ORIGIN_OUTPUT_INDEX = "_datadump_origin_output_index"


@dataclass(frozen=True, slots=True)
class TensorDesc:
    """One input or output of an op: its dtype (``DT_FLOAT16``), shape, and the user's tensor
    it carries (outputs only; None when the op is the user's own)."""

    dtype: str
    shape: tuple[int, ...] = ()
    origin_name: str | None = None
    origin_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        attrs = []
        if self.origin_name is not None:
            attrs.append({"key": ORIGIN_NAME, "value": {"s": self.origin_name}})
        if self.origin_index is not None:
            attrs.append({"key": ORIGIN_OUTPUT_INDEX, "value": {"i": self.origin_index}})
        # "attr" even when empty: msaccucmp's fusion rule parser drops an output_desc without
        # one, and then takes the op's consumers for readers of an op it does not know
        return {
            "dtype": self.dtype,
            "layout": "ND",
            "shape": {"dim": list(self.shape)},
            "attr": attrs,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TensorDesc:
        attrs = _attrs(data)
        index = attrs.get(ORIGIN_OUTPUT_INDEX)
        name = attrs.get(ORIGIN_NAME)
        return cls(
            dtype=str(data.get("dtype", "DT_UNDEFINED")),
            shape=tuple(int(d) for d in (data.get("shape") or {}).get("dim", [])),
            origin_name=None if name is None else str(name),
            origin_index=None if index is None else int(index),
        )


@dataclass(frozen=True, slots=True)
class GeOp:
    """One op of a model; ``id`` is its position in execution order (the dump's task id)."""

    name: str
    type: str
    id: int
    inputs: tuple[str, ...] = ()
    """Producers as ``node:index`` (``node:-1`` for a control edge)."""
    input_desc: tuple[TensorDesc, ...] = ()
    output_desc: tuple[TensorDesc, ...] = ()
    original_op_names: tuple[str, ...] = ()
    """The user's ops this op stands for; empty: the op is the user's own (its name)."""
    pass_name: str = ""
    """The fusion pass that made this op ("" when none did)."""

    @property
    def origins(self) -> tuple[str, ...]:
        """The user's op names this op stands for (its own name when it is the user's)."""
        return self.original_op_names or (self.name,)

    def to_json(self) -> dict[str, Any]:
        attrs: list[dict[str, Any]] = []
        if self.original_op_names:
            value = {"list": {"s": list(self.original_op_names)}}
            attrs.append({"key": ORIGINAL_OP_NAMES, "value": value})
        if self.pass_name:
            attrs.append({"key": PASS_NAME, "value": {"s": self.pass_name}})
        return {
            "name": self.name,
            "type": self.type,
            "id": self.id,
            "input": list(self.inputs),
            "input_desc": [d.to_json() for d in self.input_desc],
            "output_desc": [d.to_json() for d in self.output_desc],
            "attr": attrs,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], position: int) -> GeOp:
        attrs = _attrs(data)
        originals = attrs.get(ORIGINAL_OP_NAMES) or []
        if isinstance(originals, str):
            originals = [originals]
        return cls(
            name=str(data["name"]),
            type=str(data.get("type", "")),
            id=int(data.get("id", position)),
            inputs=tuple(str(text) for text in data.get("input", [])),
            input_desc=tuple(TensorDesc.from_json(d) for d in data.get("input_desc", [])),
            output_desc=tuple(TensorDesc.from_json(d) for d in data.get("output_desc", [])),
            original_op_names=tuple(str(n) for n in originals if n),
            pass_name=str(attrs.get(PASS_NAME) or ""),
        )


@dataclass(frozen=True, slots=True)
class GeGraph:
    """One model: its name (the dump's ``model_name``) and its ops in execution order."""

    name: str
    ops: tuple[GeOp, ...]

    def to_json(self) -> dict[str, Any]:
        """The file content: ``{"graph": [this graph]}``. Each op also lists where its outputs
        go, as GE writes it (``dst_name``/``dst_index``, :func:`destinations`)."""
        consumers = destinations(self.ops)
        ops = []
        for op in self.ops:
            names, slots = consumers[op.name]
            ops.append({**op.to_json(), "dst_name": names, "dst_index": slots})
        return {"graph": [{"name": self.name, "op": ops}]}


def destinations(ops: Sequence[GeOp]) -> dict[str, tuple[list[str], list[int]]]:
    """Per op, GE's ``dst_name``/``dst_index``: for each output in order, the first op reading
    it and at which of its data inputs, then one entry per op it is a control input of, index
    ``-1``.

    precision_tool reads output ``i``'s descriptor from the ``i``-th entry whose index is not
    ``-1`` (``lib/graph/op.py``), so an output no op reads still has an entry: ``""`` and 0.

    >>> a = GeOp("a", "Data", 0, output_desc=(TensorDesc("DT_FLOAT"),))
    >>> destinations([a, GeOp("b", "Relu", 1, ("a:0",)), GeOp("c", "NoOp", 2, ("a:-1",))])["a"]
    (['b', 'c'], [0, -1])
    """
    readers: dict[tuple[str, int], tuple[str, int]] = {}
    controls: dict[str, list[str]] = {}
    for op in ops:
        data_slot = 0
        for text in op.inputs:
            producer, _, index = text.rpartition(":")
            if index == "-1":
                controls.setdefault(producer, []).append(op.name)
                continue
            if index.isdigit():
                readers.setdefault((producer, int(index)), (op.name, data_slot))
            data_slot += 1
    found = {}
    for op in ops:
        outs = [readers.get((op.name, i), ("", 0)) for i in range(len(op.output_desc))]
        ctl = controls.get(op.name, [])
        found[op.name] = ([n for n, _ in outs] + ctl, [i for _, i in outs] + [-1] * len(ctl))
    return found


def with_data_inputs(graph: GeGraph) -> GeGraph:
    """``graph`` with a ``Data`` op first for each producer outside it that its ops read (a fed
    tensor, another GeOp's output: GE's graph has a ``Data`` node for every input of a GeOp),
    control edges from outside left out, ids renumbered 0..n-1 in order, so every ``input``
    names an op of the JSON (msaccucmp's fusion rule parser warns of, and skips, one that
    does not).

    >>> g = with_data_inputs(GeGraph("G", (GeOp("y", "Relu", 0, ("x:0", "z:-1")),)))
    >>> [(op.name, op.type, op.id, op.inputs) for op in g.ops]
    [('x', 'Data', 0, ()), ('y', 'Relu', 1, ('x:0',))]
    """
    names = {op.name for op in graph.ops}
    outside: dict[str, dict[int, TensorDesc]] = {}
    trimmed = []
    for op in graph.ops:
        inputs = []
        data_slot = 0
        for text in op.inputs:
            producer, _, index = text.rpartition(":")
            if producer in names:
                inputs.append(text)
            elif index != "-1" and index.isdigit():
                given = op.input_desc[data_slot] if data_slot < len(op.input_desc) else None
                desc = TensorDesc(given.dtype if given else "DT_UNDEFINED")
                outside.setdefault(producer, {}).setdefault(int(index), desc)
                inputs.append(text)
            if index != "-1":
                data_slot += 1
        trimmed.append(replace(op, inputs=tuple(inputs)))
    data = [
        GeOp(name, "Data", 0, output_desc=tuple(
            descs.get(i, TensorDesc("DT_UNDEFINED")) for i in range(max(descs) + 1)
        ))
        for name, descs in outside.items()
    ]  # fmt: skip
    ops = (*data, *trimmed)
    return replace(graph, ops=tuple(replace(op, id=i) for i, op in enumerate(ops)))


def from_json(data: Mapping[str, Any]) -> list[GeGraph]:
    """The graphs of a parsed JSON document (``{"graph": [...]}``).

    Raises:
        ValueError: ``data`` has no ``graph`` list.
    """
    graphs = data.get("graph") if isinstance(data, Mapping) else None
    if not isinstance(graphs, list):
        raise ValueError('not a graph JSON: no "graph" list at the top level')
    return [
        GeGraph(
            str(g.get("name", "")),
            tuple(GeOp.from_json(op, i) for i, op in enumerate(g.get("op", []))),
        )
        for g in graphs
    ]


def load(path: str | Path) -> list[GeGraph]:
    """Read a graph JSON file.

    Raises:
        ValueError: the file is not JSON or not a graph JSON (the message names the file).
        OSError: it cannot be read, or is no regular file (a FIFO, a device).
    """
    try:
        data = parse_json(read_regular(path).decode("utf-8"), str(path))
        return from_json(data)  # type: ignore[arg-type]  # from_json checks the type
    except ConfigError as err:  # invalid or too deeply nested JSON: the message names the file
        raise ValueError(str(err)) from None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: {err}") from None


def dump(graphs: Sequence[GeGraph] | GeGraph, path: str | Path) -> None:
    """Write ``graphs`` as one graph JSON file (atomically)."""
    items: Iterable[GeGraph] = [graphs] if isinstance(graphs, GeGraph) else graphs
    data = {"graph": [g.to_json()["graph"][0] for g in items]}
    write_text_atomic(Path(path), json.dumps(data, indent=1))


BUILD_GRAPH = "ge_proto_{number:08d}_Build.txt"
"""GE's build graph of GE graph ``number`` in ``DUMP_GRAPH_PATH`` (protobuf text);
``atc --mode=5 --om=FILE --json=FILE.json`` converts it, and precision_tool reads that JSON,
``<name>.txt.json``, when it is newer than the ``.txt`` (``lib/util/util.py``
``convert_proto_to_json``)."""


def dump_build(graphs: Sequence[GeGraph], directory: str | Path, number: int) -> Path:
    """Write GE graph ``number``'s build graph as GE and atc leave it in ``directory``: the
    ``.txt`` (the graphs in protobuf text format) and then its ``.txt.json`` (what
    :func:`dump` writes), whose modification time is made later than the ``.txt``'s when the
    clock did not tell them apart, so precision_tool takes the JSON as converted. The JSON's
    path."""
    text = Path(directory) / BUILD_GRAPH.format(number=number)
    data = {"graph": [g.to_json()["graph"][0] for g in graphs]}
    write_text_atomic(text, proto_text(data))
    converted = text.with_name(text.name + ".json")
    write_text_atomic(converted, json.dumps(data, indent=1))
    before, after = text.stat().st_mtime_ns, converted.stat().st_mtime_ns
    if after <= before:
        os.utime(converted, ns=(before + 1000, before + 1000))
    return converted


def proto_text(data: Mapping[str, Any], indent: int = 0) -> str:
    """A message's JSON mapping (atc's output) in protobuf text format, the inverse of atc's
    conversion for the fields a graph JSON has: an object is a message, a list repeats its
    field, strings are quoted with C escapes.

    >>> print(proto_text({"graph": [{"name": "g", "op": [{"name": "a", "id": 0}]}]}), end="")
    graph {
      name: "g"
      op {
        name: "a"
        id: 0
      }
    }
    """
    pad = "  " * indent
    lines = []
    for key, value in data.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Mapping):
                lines.append(f"{pad}{key} {{\n{proto_text(item, indent + 1)}{pad}}}\n")
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}\n")
    return "".join(lines)


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value).encode("utf-8").decode("latin-1")
    return '"' + text.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


def _attrs(data: Mapping[str, Any]) -> dict[str, Any]:
    """``[{"key": k, "value": {"s"|"i"|"b"|"list": ...}}]`` as ``{k: python value}``."""
    out: dict[str, Any] = {}
    for item in data.get("attr", []) or []:
        value = item.get("value", {})
        if "list" in value:
            listed = value["list"]
            out[item["key"]] = next(iter(listed.values()), []) if listed else []
        else:
            out[item["key"]] = next(iter(value.values()), None) if value else None
    return out
