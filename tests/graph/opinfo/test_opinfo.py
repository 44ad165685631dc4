"""The op-info library: pinned facts for the ops that matter, lookups, the vendor-format loader."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from tf2npu.config.precision import PrecisionClass
from tf2npu.errors import ConfigError
from tf2npu.graph.opinfo import NOT_IN_LIBRARY, OpInfo, OpLibrary, load_default
from tf2npu.graph.opinfo.hostonly import category

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "tools" / "derive_opinfo.py"
# The shared data sits next to the main checkout, or two levels up from a worktree.
SHARED_DATA = next(
    (p for b in (REPO.parent, REPO.parents[1]) if (p := b / "shared" / "data" / "ascend").is_dir()),
    REPO.parent / "shared" / "data" / "ascend",
)

A, D, G = PrecisionClass.ALLOW, PrecisionClass.DENY, PrecisionClass.GRAY


@pytest.mark.parametrize(
    ("op", "ge_op", "fp32", "precision", "source"),
    [
        # precision_reduce true in the ops-info file: white.
        ("MatMul", "MatMulV2", True, A, "precision_reduce"),
        ("BatchMatMul", "BatchMatMul", True, A, "precision_reduce"),
        ("BatchMatMulV2", "BatchMatMul", True, A, "precision_reduce"),
        # precision_reduce false: black.
        ("L2Loss", "L2Loss", True, D, "precision_reduce"),
        ("BiasAddGrad", "BiasAddGrad", True, D, "precision_reduce"),
        ("ApplyAdam", "ApplyAdamD", True, D, "precision_reduce"),
        ("ResourceApplyAdam", "ApplyAdamD", True, D, "precision_reduce"),
        # No flag: gray, whatever TensorFlow's AMP lists say (deny for Sum ... Log there).
        ("Sum", "ReduceSumD", True, G, "gray"),
        ("Mean", "ReduceMeanD", True, G, "gray"),
        ("Exp", "Exp", True, G, "gray"),
        ("Log", "Log", True, G, "gray"),
        ("Softmax", "SoftmaxV2", True, G, "gray"),
        ("SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits", True, G, "gray"),
        ("BiasAdd", "BiasAdd", True, G, "gray"),
        ("FusedBatchNorm", "BatchNorm", True, G, "gray"),
        ("FusedBatchNormV3", "BatchNorm", True, G, "gray"),
        ("FusedBatchNormGradV3", "BatchNormGrad", True, G, "gray"),
        ("Cast", "Cast", True, G, "gray"),
        ("Relu", "Relu", True, G, "gray"),
        ("ReluGrad", "ReluGrad", True, G, "gray"),
        ("Gelu", "Gelu", True, G, "gray"),
        ("DropOutGenMask", "", None, G, "gray"),
        ("DropOutDoMask", "DropOutDoMask", True, G, "gray"),
        ("ApplyGradientDescent", "ApplyGradientDescent", True, G, "gray"),
        ("ResourceApplyGradientDescent", "ApplyGradientDescent", True, G, "gray"),
        ("ApplyMomentum", "ApplyMomentumD", True, G, "gray"),
        # Deviations, each with its reason in the note.
        ("Conv2D", "Conv2D", False, A, "override"),
        ("Conv2DBackpropInput", "Conv2DBackpropInput", False, A, "override"),
        ("Conv2DBackpropFilter", "Conv2DBackpropFilterD", False, A, "override"),
        ("DepthwiseConv2dNative", "DepthwiseConv2D", False, A, "override"),
    ],
)
def test_pinned_ops(
    op: str, ge_op: str, fp32: bool | None, precision: PrecisionClass, source: str
) -> None:
    info = load_default().get(op)
    assert (info.device_supported, info.gray, info.heavy, info.host_only) == (
        True,
        False,
        False,
        None,
    )
    assert (info.ge_op, info.has_fp32_kernel) == (ge_op, fp32)
    assert (info.precision, info.precision_from) == (precision, source)


def test_class_notes_name_their_source() -> None:
    lib = load_default()
    assert lib.get("MatMul").note == "precision allow: Ascend precision_reduce=true"
    assert lib.get("L2Loss").note == "precision deny: Ascend precision_reduce=false"
    assert lib.get("Sum").note == ""
    assert lib.get("Conv2D").note.startswith("precision override allow: seed 004 quotes CANN's")
    assert lib.get("Conv3D").note.startswith("precision override allow: a cube-unit convolution")


def test_host_ops_are_deny_and_never_judged() -> None:
    info = load_default().get("PyFunc")
    assert (info.device_supported, info.precision, info.precision_from) == (False, D, "host")


def test_no_op_is_clear_any_more() -> None:
    """Ascend has white, black and gray lists; TF's "clear" list is not a source."""
    assert {info.precision for info in load_default()} == {A, D, G}


def test_every_override_is_documented() -> None:
    doc = (REPO / "docs" / "precision.md").read_text(encoding="utf-8")
    overrides = [info for info in load_default() if info.precision_from == "override"]
    assert len(overrides) == 9
    for info in overrides:
        assert f"| `{info.op}` | {info.precision.value} |" in doc, info.op


@pytest.mark.parametrize(
    ("name", "op_types"),
    [
        ("ReduceSumD", ("Sum",)),
        ("MatMulV2", ("MatMul",)),
        ("MatMul", ("MatMul",)),  # the TF op type itself
        ("BatchMatMul", ("BatchMatMul", "BatchMatMulV2")),
        ("BatchNorm", ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")),
        ("ReduceSum", ()),  # GE's dynamic-axes twin: no TF op maps to it in the table
        ("NoSuchOp", ()),
    ],
)
def test_op_types_named(name: str, op_types: tuple[str, ...]) -> None:
    assert load_default().op_types_named(name) == op_types


def test_float_dtypes() -> None:
    lib = load_default()
    assert lib.get("MatMul").float_dtypes == frozenset({"float16", "float32"})
    assert lib.get("Conv2D").float_dtypes == frozenset({"float16"})
    assert lib.get("DropOutGenMask").float_dtypes == frozenset()


@pytest.mark.parametrize(
    ("op", "device", "category"),
    [
        ("IteratorGetNext", False, "iterator"),
        ("MakeIterator", False, "iterator"),
        ("TensorDataset", False, "dataset"),
        ("BatchDatasetV2", False, "dataset"),
        ("PyFunc", False, "py_func"),
        ("HashTableV2", True, "resource_table"),
        ("LookupTableFindV2", True, "resource_table"),
        ("StringJoin", True, "string"),
        ("SaveV2", False, "save_restore"),
        ("RestoreV2", False, "save_restore"),
        ("ScalarSummary", False, "summary"),
    ],
)
def test_host_only(op: str, device: bool, category: str) -> None:
    info = load_default().get(op)
    assert info.op in load_default()
    assert (info.device_supported, info.host_only) == (device, category)


def test_gray_white_list_ops_are_gray() -> None:
    assert load_default().get("HashTableV2").gray is True
    assert load_default().get("StringJoin").gray is True


def test_unknown_op() -> None:
    info = load_default().get("MyCustomOp")
    assert info == OpInfo(
        op="MyCustomOp",
        device_supported=False,
        precision=D,
        precision_from="host",
        host_only=None,
        note="MyCustomOp: not in the device op library",
    )
    assert NOT_IN_LIBRARY in info.note
    assert load_default().get("MyFancyDataset").host_only == "dataset"


def test_category_patterns() -> None:
    assert category("MatMul") is None
    assert category("ParallelMapDatasetV2") == "dataset"
    assert category("_Recv") == "control"
    assert category("TFRecordReaderV2") == "file_io"


def test_load_default_is_cached() -> None:
    assert load_default() is load_default()
    assert len(load_default()) > 700


def test_iteration_is_sorted() -> None:
    names = [info.op for info in load_default()]
    assert names == sorted(names)


def _write(tmp_path: Path, content: object) -> Path:
    path = tmp_path / "npu_supported_ops.json"
    path.write_text(json.dumps(content) if not isinstance(content, str) else content)
    return path


def test_vendor_file_overlays_the_white_list(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {"PyFunc": {"isGray": True, "isHeavy": False}, "MatMul": {"isGray": True, "isHeavy": True}},
    )
    lib = OpLibrary.from_vendor_json(path)
    matmul = lib.get("MatMul")
    assert (matmul.device_supported, matmul.gray, matmul.heavy) == (True, True, True)
    assert (matmul.ge_op, matmul.precision) == ("MatMulV2", A)
    pyfunc = lib.get("PyFunc")
    assert (pyfunc.device_supported, pyfunc.gray, pyfunc.host_only) == (True, True, None)
    assert lib.get("Conv2D").device_supported is True


def test_vendor_file_adds_new_ops(tmp_path: Path) -> None:
    lib = OpLibrary.from_vendor_json(_write(tmp_path, {"MyOp": {"isGray": False}}))
    info = lib.get("MyOp")
    assert (info.device_supported, info.gray, info.heavy, info.ge_op) == (True, False, False, "")
    assert info.note == f"white list from {tmp_path / 'npu_supported_ops.json'}"


def test_vendor_file_replace(tmp_path: Path) -> None:
    lib = OpLibrary.from_vendor_json(
        _write(tmp_path, {"MatMul": {"isGray": False, "isHeavy": False}}), replace=True
    )
    assert lib.get("MatMul").device_supported is True
    conv = lib.get("Conv2D")
    assert (conv.device_supported, conv.ge_op, conv.precision) == (False, "Conv2D", A)
    assert lib.get("HashTableV2").host_only == "resource_table"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ([1, 2], "the top level is a list, expected an object of op types"),
        ({"MatMul": True}, "entry 'MatMul': the value is True, not an object"),
        ({"MatMul": {"isGray": "no"}}, "entry 'MatMul': isGray is 'no', expected true or false"),
        (
            {"MatMul": {"gray": False}},
            "entry 'MatMul': unknown key(s) gray; valid keys are isGray, isHeavy",
        ),
        ({"Mat Mul": {}}, "entry 'Mat Mul': not a TF op type name"),
    ],
)
def test_vendor_file_errors(tmp_path: Path, content: object, message: str) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(ConfigError) as caught:
        OpLibrary.from_vendor_json(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_vendor_file_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the op white list"):
        OpLibrary.from_vendor_json(tmp_path / "nope.json")


def test_tsv_header_checked() -> None:
    with pytest.raises(ValueError, match=r"ops\.tsv header"):
        OpLibrary.from_tsv("op\tdevice\n")
    with pytest.raises(ValueError, match=r"ops\.tsv header"):
        OpLibrary.from_tsv("# provenance only\n")


def _tsv(*rows: str) -> str:
    header = "op device gray heavy ge_op float_dtypes fp32 precision precision_from host_only note"
    return "\n".join(["# provenance", "#   more", header.replace(" ", "\t"), *rows]) + "\n"


def test_tsv_provenance_lines_are_skipped() -> None:
    lib = OpLibrary.from_tsv(_tsv("Sum\t1\t0\t0\tReduceSumD\tfloat16,float32\t1\tgray\tgray\t\t"))
    info = lib.get("Sum")
    assert (info.ge_op, info.precision, info.precision_from) == ("ReduceSumD", G, "gray")
    assert lib.op_types_named("ReduceSumD") == ("Sum",)


def test_tsv_unknown_precision_source() -> None:
    with pytest.raises(ValueError, match="precision_from 'tf_amp' is none of precision_reduce"):
        OpLibrary.from_tsv(_tsv("Sum\t1\t0\t0\tReduceSumD\t\t\tdeny\ttf_amp\t\t"))


def test_shipped_tsv_has_provenance() -> None:
    head = _tsv_bytes().decode().splitlines()[:4]
    assert head[0].startswith("# tf2npu op-info library. Written by tools/derive_opinfo.py")
    assert head[2].startswith("#   npu_supported_ops.json sha256=")
    assert head[3].startswith("#   aic-ascend910-ops-info.json sha256=")


def _tsv_bytes() -> bytes:
    return resources.files("tf2npu.graph.opinfo.data").joinpath("ops.tsv").read_bytes()


def test_shipped_tsv_is_sorted_lf() -> None:
    data = _tsv_bytes()
    assert b"\r" not in data and data.endswith(b"\n")
    rows = [line for line in data.decode().splitlines() if not line.startswith("#")]
    ops = [line.split("\t")[0] for line in rows[1:]]
    assert ops == sorted(set(ops))


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="vendor data not present")
def test_derive_script_reproduces_shipped_tsv(tmp_path: Path) -> None:
    out = tmp_path / "ops.tsv"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--data-dir", str(SHARED_DATA), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    assert out.read_bytes() == _tsv_bytes(), "run tools/derive_opinfo.py and commit its output"
