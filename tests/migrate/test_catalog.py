"""The API catalog: pinned statuses, lookup rules, and the shipped data against its source."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from tf2npu.migrate.catalog import ApiInfo, classify
from tf2npu.migrate.model import ApiStatus

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "derive_api_catalog.py"
SHARED_DATA = REPO.parent / "shared" / "data" / "ascend"


def _tsv_bytes() -> bytes:
    return resources.files("tf2npu.migrate.data").joinpath("api_catalog.tsv").read_bytes()


def _rows() -> list[list[str]]:
    return [line.split("\t") for line in _tsv_bytes().decode("utf-8").splitlines()[1:]]


@pytest.mark.parametrize(
    ("name", "status", "module"),
    [
        ("tf.nn.dropout", ApiStatus.MIGRATED_BY_TOOL, "tf.nn"),
        ("tf.estimator.Estimator", ApiStatus.MIGRATED_BY_TOOL, "tf.estimator"),
        ("tf.estimator.RunConfig", ApiStatus.MIGRATED_BY_TOOL, "tf.estimator"),
        ("tf.Session", ApiStatus.TRAINING_AFTER_MIGRATION, "tf"),
        # MANUAL in the anchor, plain SUPPORTED in the latest edition: the anchor's caveat is kept.
        ("tf.while_loop", ApiStatus.MANUAL, "tf"),
        ("tf.cond", ApiStatus.MANUAL, "tf"),
        ("tf.case", ApiStatus.MANUAL, "tf"),
        ("tf.py_func", ApiStatus.SUPPORTED, "tf"),
        ("tf.ConfigProto", ApiStatus.MIGRATED_BY_TOOL, "tf"),
        ("tf.enable_eager_execution", ApiStatus.UNSUPPORTED, "tf"),
        ("tf.train.replica_device_setter", ApiStatus.UNSUPPORTED_HARMLESS, "tf.train"),
        ("tf.compat.v2.abs", ApiStatus.COMPAT, "tf.compat.v2"),
        ("tf.compat.v2.no_such_api", ApiStatus.COMPAT, "tf.compat.v2"),
        ("tf.contrib.slim", ApiStatus.DEPRECATED, "tf.contrib"),
        ("tf.contrib.layers.fully_connected", ApiStatus.DEPRECATED, "tf.contrib"),
        ("tf.CriticalSection", ApiStatus.ANALYSING, "tf"),
        ("hvd.init", ApiStatus.TRAINING_AFTER_MIGRATION, "hvd"),
        ("hvd.rank", ApiStatus.TRAINING_AFTER_MIGRATION, "hvd"),
        ("hvd.DistributedOptimizer", ApiStatus.TRAINING_AFTER_MIGRATION, "hvd"),
        ("hvd.allreduce", ApiStatus.ANALYSING, "hvd"),
        # Listed by the vendor as "hvd.elastic.run(func)".
        ("hvd.elastic.run", ApiStatus.ANALYSING, "hvd"),
    ],
)
def test_pinned_status(name: str, status: ApiStatus, module: str) -> None:
    info = classify(name)
    assert (info.api, info.module, info.status) == (name, module, status)
    assert info.advice


def test_replacements_name_their_target() -> None:
    assert classify("hvd.rank").advice == (
        "tf2npu rewrites hvd.rank to get_npu_rank_id; training then runs on Ascend."
    )
    assert classify("tf.nn.dropout").advice == "tf2npu rewrites tf.nn.dropout to npu_ops.dropout."
    assert "npu_distributed_optimizer_wrapper" in classify("hvd.DistributedOptimizer").advice
    # The anchor's claim "tf.estimator.Estimator --> NPUEstimator" is not taken: the latest
    # edition (which wins) names no replacement.
    assert classify("tf.estimator.Estimator").advice == (
        "tf2npu rewrites this call; check the change list."
    )


def test_compat_v1_is_classified_as_its_tf_name() -> None:
    info = classify("tf.compat.v1.Session")
    assert info.api == "tf.compat.v1.Session"
    assert info.status is ApiStatus.TRAINING_AFTER_MIGRATION
    assert info.module == "tf"
    assert info.advice.startswith("Compat alias of tf.Session (the same object on TF 1.15). ")
    assert classify("tf.compat.v1.nn.dropout").status is ApiStatus.MIGRATED_BY_TOOL
    assert classify("tf.compat.v1.while_loop").status is ApiStatus.MANUAL


def test_compat_v1_without_tf_counterpart() -> None:
    # Listed only as a compat constant: the alias's own row counts.
    assert classify("tf.compat.v1.float32").status is ApiStatus.COMPAT
    info = classify("tf.compat.v1.no_such_api")
    assert info.status is ApiStatus.NOT_LISTED
    assert info.module == "tf.compat.v1"
    assert "tf.no_such_api" in info.advice


def test_enum_attribute_is_classified_as_its_class() -> None:
    info = classify("tf.AggregationMethod.ADD_N")
    assert info.api == "tf.AggregationMethod.ADD_N"
    assert info.status is ApiStatus.SUPPORTED
    assert info.module == "tf"
    assert info.advice.startswith("Classified as tf.AggregationMethod, to which it belongs. ")
    # An enum of a deprecated class is deprecated.
    contrib = classify("tf.contrib.learn.KMeansClustering.CLUSTERS")
    assert contrib.status is ApiStatus.DEPRECATED
    assert "tf.contrib.learn.KMeansClustering" in contrib.advice
    assert classify("tf.compat.v1.GraphKeys.LOSSES").status is ApiStatus.SUPPORTED


def test_member_falls_back_to_its_parent() -> None:
    info = classify("tf.Session.run")
    assert info.api == "tf.Session.run"
    assert info.status is ApiStatus.TRAINING_AFTER_MIGRATION
    assert info.module == "tf"
    assert info.advice.startswith("Classified as tf.Session, to which it belongs. ")
    assert classify("tf.train.AdamOptimizer.minimize").status is ApiStatus.SUPPORTED
    assert classify("tf.data.Dataset.batch").status is ApiStatus.MIGRATED_BY_TOOL


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("tf.no_such_api", "tf"),
        ("tf.no_such_module.f", "tf.no_such_module"),
        ("hvd.no_such_api", "hvd"),
        ("numpy.zeros", "Unknown"),
    ],
)
def test_unknown_name_is_not_listed(name: str, module: str) -> None:
    assert classify(name) == ApiInfo(
        api=name,
        module=module,
        status=ApiStatus.NOT_LISTED,
        advice="Not in the Ascend support list; check it by running the migrated script "
        "(tf2npu run).",
    )


def test_every_status_but_not_listed_occurs_in_the_data() -> None:
    seen = {row[2] for row in _rows()}
    ours = {ApiStatus.NOT_LISTED, ApiStatus.HOST_PYTHON}  # never in the vendor's data
    expected = {s.value for s in ApiStatus if s not in ours}
    assert seen == expected


def test_every_row_classifies_as_itself() -> None:
    rows = _rows()
    by_api = {row[0]: row for row in rows}
    for api, module, status, _replacement, parent in rows:
        if parent in by_api:
            assert by_api[parent][2] == status, api
        if api.startswith("tf.compat.v1."):
            continue  # classified as its tf.* name
        info = classify(api)
        assert (info.api, info.module, info.status.value) == (api, module, status)


def test_tsv_shape() -> None:
    data = _tsv_bytes()
    assert b"\r" not in data
    assert data.endswith(b"\n")
    lines = data.decode("utf-8").split("\n")[:-1]
    assert lines[0] == "api\tmodule\tstatus\treplacement\tparent"
    apis = [line.split("\t")[0] for line in lines[1:]]
    assert apis == sorted(set(apis))
    assert all(line.count("\t") == 4 for line in lines)


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"vendor lists not available at {SHARED_DATA}")
def test_shipped_data_is_what_the_script_derives(tmp_path: Path) -> None:
    out = tmp_path / "api_catalog.tsv"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--data-dir", str(SHARED_DATA), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    assert out.read_bytes() == _tsv_bytes(), "run tools/derive_api_catalog.py and commit its output"


def test_unknown_status_is_an_error_naming_the_row(tmp_path: Path) -> None:
    (tmp_path / "tf115_api_support_list.csv").write_text(
        "模块名,API名,支持度,迁移建议\ntf,tf.abs,支持,无。\n", encoding="utf-8"
    )
    (tmp_path / "tf115_api_support_list_latest.csv").write_text(
        "模块名,API名,工具迁移API支持度,说明\ntf,tf.abs,支持（无需迁移）,无。\n"
        "tf,tf.acos,也许支持,无。\n",
        encoding="utf-8",
    )
    (tmp_path / "tf115_api_support_list_latest_sheet2_enums.csv").write_text(
        "API名,说明\n", encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert "tf115_api_support_list_latest.csv:3" in result.stderr
    assert "tf.acos" in result.stderr
    assert "也许支持" in result.stderr
    assert not (tmp_path / "o").exists()


def test_module_constants_listed_only_for_scanning_are_supported() -> None:
    info = classify("tf.float32")
    assert info.status is ApiStatus.SUPPORTED
    assert "tf.compat.v1.float32" in info.advice
    assert classify("tf.no_such_constant").status is ApiStatus.NOT_LISTED


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("tf.flags", "tf.flags"),
        ("tf.flags.FLAGS", "tf.flags"),
        ("tf.flags.DEFINE_integer", "tf.flags"),
        ("tf.app.flags.FLAGS", "tf.app.flags"),
        ("tf.compat.v1.flags.DEFINE_string", "tf.flags"),
    ],
)
def test_flags_are_host_python(name: str, module: str) -> None:
    info = classify(name)
    assert (info.status, info.module) == (ApiStatus.HOST_PYTHON, module)
    assert "builds no graph op" in info.advice


@pytest.mark.parametrize(
    "name",
    [
        "tf.core.protobuf.rewriter_config_pb2.RewriterConfig.OFF",
        "tf.core.protobuf.rewriter_config_pb2.RewriterConfig",
        "tf.core.protobuf.config_pb2.ConfigProto",
    ],
)
def test_session_config_protobufs_are_host_python(name: str) -> None:
    info = classify(name)
    assert (info.status, info.module) == (ApiStatus.HOST_PYTHON, "tf.core.protobuf")
    assert info.advice.startswith("A configuration protobuf (such as RewriterConfig.OFF")
    assert info.advice.endswith("so nothing to do.")


def test_a_module_merely_named_like_flags_is_not_host_python() -> None:
    assert classify("tf.flagsmith").status is ApiStatus.NOT_LISTED
