"""The TSV schema of ``data/ops.tsv``: columns, and parsing of one row into an :class:`OpInfo`."""

from __future__ import annotations

from dataclasses import dataclass, field

from tf2npu.config.precision import PrecisionClass

COLUMNS = (
    "op",
    "device",
    "gray",
    "heavy",
    "ge_op",
    "float_dtypes",
    "fp32",
    "precision",
    "precision_from",
    "host_only",
    "note",
)

FLOAT_DTYPES = ("float16", "float32", "bfloat16", "double")

NOT_IN_LIBRARY = "not in the device op library"

#: Where an op's precision class comes from (the ``precision_from`` column).
PRECISION_SOURCES = {
    "precision_reduce": "Ascend's precision_reduce flag on the GE op (true allow, false deny)",
    "gray": "no precision_reduce flag: Ascend's gray list (follows its float inputs)",
    "override": "a deliberate deviation from Ascend's facts; the note says why",
    "host": "not device-supported: never judged, keeps its TF dtype",
}


@dataclass(frozen=True)
class OpInfo:
    """What tf2npu knows about one TF op type on the Ascend device.

    Attributes:
        op: the TF op type (``MatMul``).
        device_supported: listed in the adapter's white list (``npu_supported_ops.json``).
        gray: a gray op: host in mixed compute, device in full offload.
        heavy: marked heavy in the white list.
        ge_op: the GE op type it lowers to (``MatMulV2``), ``""`` when unknown.
        float_dtypes: float dtypes the AI-Core kernel accepts for its main input; empty when
            unknown.
        has_fp32_kernel: an fp32 AI-Core kernel exists; ``None`` when unknown.
        precision: the default mixed-precision class.
        precision_from: why it has that class, a key of :data:`PRECISION_SOURCES`.
        host_only: the host-only category (``dataset``, ``py_func``, ...) or ``None``.
        note: why the row looks the way it does, in words.
    """

    op: str
    device_supported: bool
    gray: bool = False
    heavy: bool = False
    ge_op: str = ""
    float_dtypes: frozenset[str] = field(default_factory=frozenset)
    has_fp32_kernel: bool | None = None
    precision: PrecisionClass = PrecisionClass.GRAY
    precision_from: str = "gray"
    host_only: str | None = None
    note: str = ""


def _flag(text: str) -> bool:
    return text == "1"


def _optional_flag(text: str) -> bool | None:
    return None if text == "" else text == "1"


def _source(text: str) -> str:
    if text not in PRECISION_SOURCES:
        raise ValueError(
            f"ops.tsv: precision_from {text!r} is none of {', '.join(PRECISION_SOURCES)}"
        )
    return text


def data_lines(text: str) -> list[str]:
    """The lines of an ``ops.tsv`` text after its ``#`` provenance lines (header first)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return lines[start:]


def parse_row(line: str) -> OpInfo:
    """One TSV data line (no trailing newline) as an :class:`OpInfo`."""
    cells = line.split("\t")
    row = dict(zip(COLUMNS, cells, strict=True))
    return OpInfo(
        op=row["op"],
        device_supported=_flag(row["device"]),
        gray=_flag(row["gray"]),
        heavy=_flag(row["heavy"]),
        ge_op=row["ge_op"],
        float_dtypes=frozenset(filter(None, row["float_dtypes"].split(","))),
        has_fp32_kernel=_optional_flag(row["fp32"]),
        precision=PrecisionClass(row["precision"]),
        precision_from=_source(row["precision_from"]),
        host_only=row["host_only"] or None,
        note=row["note"],
    )
