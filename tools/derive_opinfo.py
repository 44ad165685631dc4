"""Derive tf2npu's op-info library from public CANN data.

Inputs (in ``--data-dir``, default ``shared/data/ascend`` next to the repository or, from a
worktree, one level further up):

* ``npu_supported_ops.json`` -- the adapter's TF op white list, ``{op: {isGray, isHeavy}}``;
* ``aic-ascend910-ops-info.json`` -- Ascend 910 AI-Core kernels per GE op type (dtypes of each
  input/output, a few ``precision_reduce`` flags);
* ``built_in_graph_rules.json`` -- GE's built-in graph fusion rules (which GE op types they
  create).

Output (``--out``): ``src/tf2npu/graph/opinfo/data/ops.tsv``, UTF-8, LF, one header line, one
row per TF op type sorted by name. Rows: every white-listed op, plus the host-only ops of
``HOST_OPS`` (well-known TF ops absent from the list). Columns:

* ``op``, ``device`` (in the white list, or one of ``ADAPTER_OPS``: device-only ops the adapter
  registers itself that this snapshot of the list lacks, or a GE op that GE's built-in graph
  fusion rules in ``built_in_graph_rules.json`` create: :func:`fusion_ops`), ``gray``,
  ``heavy`` -- facts of the white list;
* ``ge_op`` -- the GE op type: ``GE_NAMES`` when listed there, else the same name when the
  ops-info file has it, else the ``Resource``-less name (``ResourceApplyAdam`` -> ``ApplyAdam``)
  and the name + ``D`` (GE's constant-attribute variant: ``ApplyAdam`` -> ``ApplyAdamD``),
  first found wins; empty when no kernel is known (AI-CPU or host ops);
* ``float_dtypes`` -- float dtypes of the kernel's main input (the first input that declares a
  float dtype; else the first output). 47 GE ops choose formats at run time
  (``dynamicFormat``) and declare no dtypes; for the ones TF ops map to, ``DYNAMIC_DTYPES``
  gives them by hand (from CANN's op docs);
* ``fp32`` -- 1 when ``float32`` is among them, 0 when only others are, empty when unknown;
* ``precision`` -- see *Precision policy*;
* ``host_only`` -- :func:`tf2npu.graph.opinfo.hostonly.host_only` (name patterns + white list);
* ``note`` -- the source of the less obvious columns.

Precision policy (first rule that applies wins; the ``precision_from`` column says which):

1. ``override`` -- ``PRECISION_OVERRIDES``, the deviations from Ascend's facts, each with its
   reason (written into the ``note`` column and listed in ``docs/precision.md``).
2. ``precision_reduce`` -- Ascend's flag on the GE op. In CANN's ops-info files the flag is what
   ``allow_mix_precision`` reads: ``true`` puts the op on the white (allow) list, ``false`` on
   the black (deny) list. The flag is present on 8 GE ops only (MatMul/MatMulV2/BatchMatMul/
   GEMM/ReluGradV2 true; ApplyAdamD/BiasAddGrad/L2Loss false).
3. ``host`` -- an op that is not device-supported: deny. It never runs on the device, so the
   precision pass never judges it; deny records that it keeps its TF dtype.
4. ``gray`` -- every other device op: Ascend's class for an op without the flag (it follows its
   float inputs). TensorFlow's AMP lists play no part: they put ``Sum``, ``Mean``, ``Exp``,
   ``Log``, ``Softmax`` ... on a deny list Ascend does not have, and a ``ReduceSumD`` fed by a
   float16 ``MatMul`` then runs in float16 on the device (seed 000, case 04).

The file starts with ``#`` provenance lines: the tool, the input files with their SHA-256, the
policy and the overridden ops.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tf2npu.graph.opinfo._schema import COLUMNS, FLOAT_DTYPES
from tf2npu.graph.opinfo.hostonly import host_only

REPO = Path(__file__).resolve().parents[1]
# The shared data sits next to the main checkout, or two levels up from a worktree.
_CANDIDATES = [base / "shared" / "data" / "ascend" for base in (REPO.parent, REPO.parents[1])]
DEFAULT_DATA = next((path for path in _CANDIDATES if path.is_dir()), _CANDIDATES[0])
DEFAULT_OUT = REPO / "src" / "tf2npu" / "graph" / "opinfo" / "data" / "ops.tsv"
WHITE_LIST = "npu_supported_ops.json"
OPS_INFO = "aic-ascend910-ops-info.json"
GRAPH_RULES = "built_in_graph_rules.json"

# TF op type -> GE op type where neither the same name nor the generic rules find it.
GE_NAMES: dict[str, str] = {
    "MatMul": "MatMulV2",
    "BatchMatMulV2": "BatchMatMul",  # this CANN's ops-info has no BatchMatMulV2 kernel
    "Softmax": "SoftmaxV2",
    "LogSoftmax": "LogSoftmaxV2",
    "Sum": "ReduceSumD",
    "Mean": "ReduceMeanD",
    "Max": "ReduceMaxD",
    "Min": "ReduceMinD",
    "Prod": "ReduceProdD",
    "All": "ReduceAllD",
    "Any": "ReduceAnyD",
    "EuclideanNorm": "EuclideanNormD",
    "FusedBatchNorm": "BatchNorm",
    "FusedBatchNormV2": "BatchNorm",
    "FusedBatchNormV3": "BatchNorm",
    "FusedBatchNormGrad": "BatchNormGrad",
    "FusedBatchNormGradV2": "BatchNormGrad",
    "FusedBatchNormGradV3": "BatchNormGrad",
    "DepthwiseConv2dNative": "DepthwiseConv2D",
    "DepthwiseConv2dNativeBackpropFilter": "DepthwiseConv2DBackpropFilterD",
    "DepthwiseConv2dNativeBackpropInput": "DepthwiseConv2DBackpropInputD",
    "Conv3DBackpropFilterV2": "Conv3DBackpropFilterD",
    "Conv3DBackpropInputV2": "Conv3DBackpropInputD",
    "ResizeBilinear": "ResizeBilinearV2D",
    "ResizeBilinearGrad": "ResizeBilinearV2Grad",
    "ResizeNearestNeighbor": "ResizeNearestNeighborV2D",
    "ResizeNearestNeighborGrad": "ResizeNearestNeighborV2GradD",
    "TopKV2": "TopKD",
    "NpuAllocFloatStatus": "NPUAllocFloatStatus",
    "NpuClearFloatStatus": "NPUClearFloatStatus",
    "NpuGetFloatStatus": "NPUGetFloatStatus",
    "ResourceApplyKerasMomentum": "ApplyKerasMomentumD",
}

# Dtypes of dynamicFormat GE kernels (the ops-info file leaves them to op_select_format).
DYNAMIC_DTYPES: dict[str, str] = {
    "Add": "float16,float32",
    "BatchMatMul": "float16,float32",
    "BiasAdd": "float16,float32",
    "ConcatV2D": "float16,float32",
    "ConcatD": "float16,float32",
    "Conv2D": "float16",
    "DropOutDoMask": "float16,float32",
    "LayerNorm": "float16,float32",
    "Mul": "float16,float32",
    "Reciprocal": "float16,float32",
    "ReverseV2D": "float16,float32",
    "Select": "float16,float32",
    "SoftmaxV2": "float16,float32",
}


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CONV_LIKE = (
    "allow",
    "a cube-unit convolution like Conv2D, float16-only in the ops-info file; white like Conv2D",
)

# Where tf2npu departs from Ascend's precision_reduce facts: (class, reason), applied first.
PRECISION_OVERRIDES: dict[str, tuple[str, str]] = {
    "Conv2D": (
        "allow",
        "seed 004 quotes CANN's ops-info entry for Conv2D with precision_reduce true; the "
        "ops-info file here carries no flag on Conv2D",
    ),
    "Conv2DBackpropFilter": _CONV_LIKE,
    "Conv2DBackpropInput": _CONV_LIKE,
    "Conv3D": _CONV_LIKE,
    "Conv3DBackpropFilterV2": _CONV_LIKE,
    "Conv3DBackpropInputV2": _CONV_LIKE,
    "DepthwiseConv2dNative": _CONV_LIKE,
    "DepthwiseConv2dNativeBackpropFilter": _CONV_LIKE,
    "DepthwiseConv2dNativeBackpropInput": _CONV_LIKE,
}

# TF op types the adapter registers itself (tf_adapter's REGISTER_OP) for ops only the device
# runs -- their CPU kernels are empty stubs -- that this snapshot of the white list does not
# carry under their TF spelling: TF type -> GE type. They are device ops like the listed ones.
ADAPTER_OPS: dict[str, str] = {
    "DynamicRnn": "DynamicRNN",
    "DynamicGruV2": "DynamicGRUV2",
    "DynamicAUGRU": "DynamicAUGRU",
    "DropOutGenMaskV3": "DropOutGenMaskV3",
    "DropOutDoMaskV3": "DropOutDoMaskV3",
    "HcomReduce": "HcomReduce",  # hccl_ops.reduce; HCCL ops have no AI-Core kernel
}
_ADAPTER_NOTE = "registered by the TF adapter itself; not in this snapshot of the white list"

# Well-known TF op types absent from the white list, shipped so that their host-only category
# is data (``get`` classifies other unlisted names by the same patterns).
HOST_OPS = _names(
    "AnonymousIterator AnonymousIteratorV2 BatchDataset BatchDatasetV2 CacheDataset "
    "DecodeCSV DecodeJpeg DecodePng DecodeRaw EagerPyFunc FilterDataset "
    "FixedLengthRecordDataset FixedLengthRecordReaderV2 FlatMapDataset FlushSummaryWriter "
    "HistogramSummary ImageSummary InterleaveDataset Iterator IteratorFromStringHandleV2 "
    "IteratorGetNext IteratorGetNextSync IteratorToStringHandle IteratorV2 MakeIterator "
    "MapAndBatchDataset MapDataset MatchingFiles MergeSummary MergeV2Checkpoints "
    "ModelDataset OneShotIterator OptimizeDataset ParallelInterleaveDatasetV2 "
    "ParallelMapDataset ParseExample ParseExampleV2 ParseSingleExample PrefetchDataset "
    "PyFunc PyFuncStateless RangeDataset ReadFile ReaderReadV2 RepeatDataset RestoreV2 "
    "SaveV2 ScalarSummary ShardedFilename ShuffleDataset ShuffleAndRepeatDataset "
    "TFRecordDataset TFRecordReaderV2 TensorDataset TensorSliceDataset TensorSummaryV2 "
    "TextLineDataset TextLineReaderV2 WriteFile WriteScalarSummary ZipDataset _HostRecv "
    "_HostSend _Recv _Send"
)


@dataclass(frozen=True)
class Kernel:
    """What the derivation uses of one GE op's ops-info entry."""

    float_dtypes: tuple[str, ...] | None
    precision_reduce: bool | None


def _norm_dtype(text: str) -> str:
    name = text.strip()
    return "float32" if name == "float" else name


def _declared_floats(entry: Mapping[str, Any]) -> tuple[str, ...] | None:
    ports = [key for key in entry if key.startswith("input")]
    ports += [key for key in entry if key.startswith("output")]
    for key in sorted(ports, key=lambda k: (not k.startswith("input"), int(k.lstrip("inputo")))):
        dtypes = {_norm_dtype(d) for d in str(entry[key].get("dtype", "")).split(",") if d}
        floats = tuple(d for d in FLOAT_DTYPES if d in dtypes)
        if floats:
            return floats
    return None


def _kernel(name: str, entry: Mapping[str, Any]) -> Kernel:
    floats = _declared_floats(entry)
    if floats is None and name in DYNAMIC_DTYPES:
        floats = tuple(DYNAMIC_DTYPES[name].split(","))
    flag = entry.get("precision_reduce", {}).get("flag")
    return Kernel(floats, None if flag is None else flag == "true")


def fusion_ops(rules: Mapping[str, Any], white: Mapping[str, Any]) -> dict[str, list[str]]:
    """GE op types GE's built-in graph fusion rules create that no TF script names (not in the
    white list), each with the rules that create it. tf2npu's fusion rules put some of them
    into graphs the same way (``AdamApplyOne``), so they are device ops here too."""
    found: dict[str, set[str]] = {}
    for rule in rules.get("Rules", []):
        for node in rule.get("FusionGraph", {}).get("Nodes", []):
            for op in node.get("type", []):
                if op not in white:
                    found.setdefault(op, set()).add(rule["RuleName"])
    return {op: sorted(names) for op, names in sorted(found.items())}


def ge_name(op: str, kernels: Mapping[str, Kernel]) -> str:
    """The GE op type of TF op ``op`` (see the module docstring), ``""`` when none is known."""
    if op in GE_NAMES:
        return GE_NAMES[op]
    if op in ADAPTER_OPS:
        return ADAPTER_OPS[op] if ADAPTER_OPS[op] in kernels else ""
    resource = op.startswith(("ResourceApply", "ResourceSparseApply"))
    stem = op.removeprefix("Resource") if resource else op
    for candidate in (op, stem, stem + "D"):
        if candidate in kernels:
            return candidate
    return ""


def precision(op: str, listed: bool, kernel: Kernel | None) -> tuple[str, str, str]:
    """``(class, precision_from, reason)`` by the policy in the module docstring."""
    if op in PRECISION_OVERRIDES:
        cls, why = PRECISION_OVERRIDES[op]
        return cls, "override", f"precision override {cls}: {why}"
    if not listed:
        return "deny", "host", ""
    if kernel is not None and kernel.precision_reduce is not None:
        cls = "allow" if kernel.precision_reduce else "deny"
        flag = "true" if kernel.precision_reduce else "false"
        return cls, "precision_reduce", f"precision {cls}: Ascend precision_reduce={flag}"
    return "gray", "gray", ""


def _row(
    op: str,
    flags: Mapping[str, bool] | None,
    kernels: Mapping[str, Kernel],
    fused: Mapping[str, Sequence[str]],
) -> list[str]:
    listed = flags is not None
    gray = bool(flags and flags.get("isGray"))
    ge = ge_name(op, kernels) if listed else ""
    kernel = kernels.get(ge) if ge else None
    floats = kernel.float_dtypes if kernel else None
    fp32 = "" if floats is None else str(int("float32" in floats))
    cls, source, why = precision(op, listed, kernel)
    notes = [why] if why else []
    if op in ADAPTER_OPS:
        notes.append(_ADAPTER_NOTE)
    elif op in fused:
        notes.append(f"created by GE's graph fusion rules ({', '.join(fused[op])})")
    elif ge and op not in GE_NAMES and ge != op:
        notes.append(f"GE name by rule: {ge}")
    if listed and not ge:
        notes.append("no AI-Core kernel in the ops-info file (AI-CPU or framework op)")
    return [
        op,
        str(int(listed)),
        str(int(gray)),
        str(int(bool(flags and flags.get("isHeavy")))),
        ge,
        ",".join(floats or ()),
        fp32,
        cls,
        source,
        host_only(op, listed=listed, gray=gray) or "",
        "; ".join(notes),
    ]


def _provenance(data_dir: Path) -> list[str]:
    """The ``#`` lines that open ``ops.tsv``: what wrote it, from what, by which policy."""
    digests = [
        f"#   {name} sha256={hashlib.sha256((data_dir / name).read_bytes()).hexdigest()}"
        for name in (WHITE_LIST, OPS_INFO, GRAPH_RULES)
    ]
    return [
        "# tf2npu op-info library. Written by tools/derive_opinfo.py; do not edit by hand.",
        "# Derived from public CANN data (Ascend 910):",
        *digests,
        "# precision: Ascend's precision_reduce flag (true allow, false deny, absent gray);",
        "#   host-only ops deny; overrides (reason in the note column, docs/precision.md):",
        *(f"#   {line}" for line in textwrap.wrap(" ".join(sorted(PRECISION_OVERRIDES)), 80)),
    ]


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{path}: cannot read ({exc}); pass --data-dir") from exc
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: expected a JSON object at the top level")
    return data


def derive(data_dir: Path) -> str:
    """The text of ``ops.tsv`` for the vendor files in ``data_dir``."""
    white = _load(data_dir / WHITE_LIST)
    fused = fusion_ops(_load(data_dir / GRAPH_RULES), white)
    extra = [*ADAPTER_OPS, *fused]
    white = {**{op: {} for op in extra if op not in white}, **white}
    info = _load(data_dir / OPS_INFO)
    kernels = {name: _kernel(name, entry) for name, entry in info.items()}
    ops = sorted(set(white) | {op for op in HOST_OPS if op not in white})
    lines = [*_provenance(data_dir), "\t".join(COLUMNS)]
    lines += ["\t".join(_row(op, white.get(op), kernels, fused)) for op in ops]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    text = derive(args.data_dir)
    args.out.write_bytes(text.encode("utf-8"))
    rows = sum(1 for line in text.splitlines() if not line.startswith("#")) - 1
    print(f"wrote {args.out} ({rows} ops)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
