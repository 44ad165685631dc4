"""The op-info library: per TF op type, what the Ascend device supports and how.

The shipped table (``data/ops.tsv``) is derived from public CANN data by
``tools/derive_opinfo.py``; its policy (GE name mapping, precision classes, host-only
categories) is documented there.

>>> lib = load_default()
>>> info = lib.get("MatMul")
>>> info.ge_op, info.precision.value, info.has_fp32_kernel
('MatMulV2', 'allow', True)
>>> lib.get("PyFunc").host_only
'py_func'
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path

from tf2npu.config.precision import PrecisionClass
from tf2npu.graph.opinfo._schema import (
    COLUMNS,
    NOT_IN_LIBRARY,
    PRECISION_SOURCES,
    OpInfo,
    data_lines,
    parse_row,
)
from tf2npu.graph.opinfo._vendor import apply_white_list, read_white_list
from tf2npu.graph.opinfo.hostonly import category

__all__ = [
    "NOT_IN_LIBRARY",
    "PRECISION_SOURCES",
    "OpInfo",
    "OpLibrary",
    "PrecisionClass",
    "load_default",
]


class OpLibrary:
    """Op facts by TF op type; ``get`` answers for every op type, listed or not."""

    def __init__(self, ops: Mapping[str, OpInfo]) -> None:
        self._ops = dict(ops)
        by_ge: dict[str, list[str]] = {}
        for name in sorted(self._ops):
            ge_op = self._ops[name].ge_op
            if ge_op:
                by_ge.setdefault(ge_op, []).append(name)
        self._by_ge = {ge_op: tuple(names) for ge_op, names in by_ge.items()}

    def get(self, op_type: str) -> OpInfo:
        """The facts for ``op_type``; an unlisted type is not device-supported and says so."""
        found = self._ops.get(op_type)
        if found is not None:
            return found
        return OpInfo(
            op=op_type,
            device_supported=False,
            precision=PrecisionClass.DENY,
            precision_from="host",
            host_only=category(op_type),
            note=f"{op_type}: {NOT_IN_LIBRARY}",
        )

    def op_types_named(self, name: str) -> tuple[str, ...]:
        """The TF op types ``name`` denotes: itself if listed, and those whose GE op it is.

        Ascend's lists and ``modify_mixlist`` name GE op types (``ReduceSumD``, ``MatMulV2``);
        graphs hold TF op types (``Sum``, ``MatMul``). Sorted; empty when neither matches.

        >>> load_default().op_types_named("ReduceSumD")
        ('Sum',)
        >>> load_default().op_types_named("BatchMatMul")
        ('BatchMatMul', 'BatchMatMulV2')
        """
        found = set(self._by_ge.get(name, ()))
        if name in self._ops:
            found.add(name)
        return tuple(sorted(found))

    def __contains__(self, op_type: object) -> bool:
        return op_type in self._ops

    def __iter__(self) -> Iterator[OpInfo]:
        return iter(self._ops[name] for name in sorted(self._ops))

    def __len__(self) -> int:
        return len(self._ops)

    @classmethod
    def from_tsv(cls, text: str) -> OpLibrary:
        """A library from the text of an ``ops.tsv`` file (``#`` lines, then the header)."""
        lines = data_lines(text)
        if not lines or tuple(lines[0].split("\t")) != COLUMNS:
            raise ValueError(f"ops.tsv header must be {chr(9).join(COLUMNS)!r}")
        infos = (parse_row(line) for line in lines[1:])
        return cls({info.op: info for info in infos})

    @classmethod
    def from_vendor_json(
        cls, path: str | Path, *, base: OpLibrary | None = None, replace: bool = False
    ) -> OpLibrary:
        """``base`` (default: the shipped library) with a white list in the vendor's format.

        The file has the shape of CANN's ``npu_supported_ops.json``:
        ``{"<TF op type>": {"isGray": bool, "isHeavy": bool}, ...}``. Listed ops become
        device-supported with the file's gray/heavy flags; dtype and precision columns stay
        ours. With ``replace=True`` the file is the whole white list (as when the adapter reads
        only this file): ops it does not list lose device support.

        Raises:
            ConfigError: the file is unreadable, not JSON, or an entry has the wrong shape;
                the message names the file, the entry and the fix.
        """
        white = read_white_list(Path(path))
        start = base if base is not None else load_default()
        return cls(apply_white_list(start._ops, white, source=str(path), replace=replace))


@functools.cache
def load_default() -> OpLibrary:
    """The shipped op-info library (parsed once, on first use)."""
    text = resources.files("tf2npu.graph.opinfo.data").joinpath("ops.tsv").read_text("utf-8")
    return OpLibrary.from_tsv(text)
