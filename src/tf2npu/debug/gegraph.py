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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tf2npu.atomic import write_text_atomic
from tf2npu.config.jsonfile import parse_json
from tf2npu.errors import ConfigError
from tf2npu.fs import read_regular

__all__ = ["GeGraph", "GeOp", "TensorDesc", "dump", "from_json", "load"]

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
        """The file content: ``{"graph": [this graph]}``."""
        return {"graph": [{"name": self.name, "op": [op.to_json() for op in self.ops]}]}


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
