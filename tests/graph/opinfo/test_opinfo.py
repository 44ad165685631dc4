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
SHARED_DATA = REPO.parent / "shared" / "data" / "ascend"

A, D, G, C = PrecisionClass.ALLOW, PrecisionClass.DENY, PrecisionClass.GRAY, PrecisionClass.CLEAR


@pytest.mark.parametrize(
    ("op", "device", "gray", "ge_op", "fp32", "precision"),
    [
        ("MatMul", True, False, "MatMulV2", True, A),
        ("BatchMatMul", True, False, "BatchMatMul", True, A),
        ("BatchMatMulV2", True, False, "BatchMatMul", True, A),
        ("Conv2D", True, False, "Conv2D", False, A),
        ("Conv2DBackpropInput", True, False, "Conv2DBackpropInput", False, A),
        ("Conv2DBackpropFilter", True, False, "Conv2DBackpropFilterD", False, A),
        ("BiasAdd", True, False, "BiasAdd", True, G),
        ("FusedBatchNorm", True, False, "BatchNorm", True, G),
        ("FusedBatchNormV3", True, False, "BatchNorm", True, G),
        ("FusedBatchNormGradV3", True, False, "BatchNormGrad", True, G),
        ("Softmax", True, False, "SoftmaxV2", True, D),
        ("Sum", True, False, "ReduceSumD", True, D),
        ("Mean", True, False, "ReduceMeanD", True, D),
        ("L2Loss", True, False, "L2Loss", True, D),
        ("Exp", True, False, "Exp", True, D),
        ("Log", True, False, "Log", True, D),
        ("Cast", True, False, "Cast", True, C),
        ("Relu", True, False, "Relu", True, C),
        ("Gelu", True, False, "Gelu", True, G),
        ("DropOutGenMask", True, False, "", None, C),
        ("DropOutDoMask", True, False, "DropOutDoMask", True, G),
        ("ApplyAdam", True, False, "ApplyAdamD", True, D),
        ("ResourceApplyAdam", True, False, "ApplyAdamD", True, D),
        ("ApplyGradientDescent", True, False, "ApplyGradientDescent", True, G),
        ("ResourceApplyGradientDescent", True, False, "ApplyGradientDescent", True, G),
        ("ApplyMomentum", True, False, "ApplyMomentumD", True, G),
    ],
)
def test_pinned_ops(
    op: str, device: bool, gray: bool, ge_op: str, fp32: bool | None, precision: PrecisionClass
) -> None:
    info = load_default().get(op)
    assert (info.device_supported, info.gray, info.heavy) == (device, gray, False)
    assert (info.ge_op, info.has_fp32_kernel, info.precision) == (ge_op, fp32, precision)
    assert info.host_only is None


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


def _tsv_bytes() -> bytes:
    return resources.files("tf2npu.graph.opinfo.data").joinpath("ops.tsv").read_bytes()


def test_shipped_tsv_is_sorted_lf() -> None:
    data = _tsv_bytes()
    assert b"\r" not in data and data.endswith(b"\n")
    ops = [line.split("\t")[0] for line in data.decode().splitlines()[1:]]
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
