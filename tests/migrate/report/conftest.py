"""The literal report every report test renders: four files, one of each status."""

from __future__ import annotations

import pytest

from tf2npu.migrate.model import (
    ApiStatus,
    ApiUse,
    Change,
    FileResult,
    FileStatus,
    Finding,
    MigrationReport,
    Severity,
)

TRAIN = "src/train.py"
UTILS = "src/utils.py"


def _use(
    path: str,
    line: int,
    col: int,
    module: str,
    api: str,
    status: ApiStatus,
    advice: str = "",
    kind: str = "call",
) -> ApiUse:
    return ApiUse(path, line, col, module, api, status, advice, kind)


def make_report() -> MigrationReport:
    train = FileResult(
        path=TRAIN,
        status=FileStatus.MIGRATED,
        lines=40,
        changes=(
            Change(TRAIN, 1, 1, "npu_import", "", "from npu_bridge.npu_init import *"),
            Change(
                TRAIN,
                12,
                8,
                "session_config",
                "tf.Session()",
                "tf.Session(config=npu_config_proto())",
            ),
            Change(
                TRAIN,
                20,
                5,
                "dropout",
                "tf.nn.dropout(x, rate=0.1)",
                "npu_ops.dropout(x, keep_prob=1 - 0.1)",
            ),
            Change(
                TRAIN,
                30,
                8,
                "session_config",
                "tf.Session(config=cfg)",
                "tf.Session(config=npu_config_proto(config_proto=cfg))",
            ),
        ),
        findings=(
            Finding(
                TRAIN,
                7,
                1,
                "device_scope",
                Severity.INFO,
                "tf.device('/gpu:0') is pinned to the CPU",
            ),
            Finding(
                TRAIN,
                25,
                3,
                "hazards",
                Severity.WARNING,
                "tf.py_func runs on the host",
                "move it into the input pipeline",
            ),
            Finding(
                TRAIN,
                33,
                5,
                "distribute",
                Severity.ERROR,
                'MirroredStrategy has no NPU equivalent, "a|b"',
                "use NPUStrategy",
            ),
        ),
        api_uses=(
            _use(
                TRAIN,
                5,
                1,
                "tf.compat.v1",
                "tf.compat.v1.placeholder",
                ApiStatus.COMPAT,
                "see tf.placeholder",
            ),
            _use(TRAIN, 6, 5, "tf", "tf.placeholder", ApiStatus.SUPPORTED),
            _use(TRAIN, 8, 5, "tf", "tf.placeholder", ApiStatus.SUPPORTED),
            _use(
                TRAIN,
                12,
                8,
                "tf",
                "tf.Session",
                ApiStatus.TRAINING_AFTER_MIGRATION,
                "config=npu_config_proto()",
            ),
            _use(
                TRAIN,
                20,
                5,
                "tf.nn",
                "tf.nn.dropout",
                ApiStatus.MIGRATED_BY_TOOL,
                "npu_ops.dropout",
            ),
            _use(TRAIN, 25, 3, "tf", "tf.py_func", ApiStatus.UNSUPPORTED, "不支持: 移到主机"),
            _use(
                TRAIN,
                30,
                8,
                "tf",
                "tf.Session",
                ApiStatus.TRAINING_AFTER_MIGRATION,
                "config=npu_config_proto()",
            ),
            _use(
                TRAIN,
                33,
                5,
                "tf.distribute",
                "tf.distribute.MirroredStrategy",
                ApiStatus.UNSUPPORTED,
                "use NPUStrategy",
                "base",
            ),
            _use(
                TRAIN,
                35,
                1,
                "tf.contrib.layers",
                "tf.contrib.layers.xavier_initializer",
                ApiStatus.DEPRECATED,
                "tf.glorot_uniform_initializer",
                "attribute",
            ),
        ),
        diff="--- a\n+++ b\n",
    )
    utils = FileResult(
        path=UTILS,
        status=FileStatus.UNCHANGED,
        lines=10,
        findings=(Finding(UTILS, 2, 1, "hazards", Severity.WARNING, "tf.flags is global state"),),
        api_uses=(
            _use(UTILS, 3, 5, "tf", "tf.placeholder", ApiStatus.SUPPORTED),
            _use(UTILS, 4, 5, "tf.flags", "tf.flags.mystery", ApiStatus.NOT_LISTED),
        ),
    )
    return MigrationReport(
        source="/data/model",
        output="/data/model_npu",
        files=[
            FileResult("README.md", FileStatus.COPIED),
            FileResult(
                "src/broken.py",
                FileStatus.FAILED,
                reason="cannot parse: invalid syntax (line 3, col 5)",
            ),
            train,
            utils,
        ],
        options={
            "precision_mode": None,
            "mix_compile": False,
            "loss_scale": "none",
            "distributed": "auto",
            "entry": "src/train.py",
        },
        seconds=1.2345,
    )


@pytest.fixture
def report() -> MigrationReport:
    return make_report()
