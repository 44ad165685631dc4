"""The precision_data/ tree and environment every precision_tool entry point sets up."""

import os
import stat

from tf2npu.compat.shims.precision_tool import _config

DIRS = [
    "precision_data/npu/debug_0",
    "precision_data/overflow/dump",
    "precision_data/npu/debug_0/dump",
    "precision_data/npu/debug_0/graph",
    "precision_data/npu/debug_0/prof",
]
ENV = {
    "DUMP_GE_GRAPH": "2",
    "DUMP_GRAPH_LEVEL": "3",
    "DUMP_GRAPH_PATH": "precision_data/npu/debug_0/graph",
    "NPU_DUMP_GRAPH": "true",
}


def test_creates_the_tree_in_the_working_directory_and_sets_the_graph_dump_env(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    env = {"DUMP_GE_GRAPH": "0", "OTHER": "kept"}
    _config.init_precision_data(env)
    for path in DIRS:
        assert stat.S_IMODE(os.stat(tmp_path / path).st_mode) == 0o700, path
    created = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert created == sorted({*DIRS, "precision_data", "precision_data/npu",
                              "precision_data/overflow"})  # fmt: skip
    assert env == {**ENV, "OTHER": "kept"}


def test_existing_directories_are_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "precision_data/npu/debug_0/dump").mkdir(parents=True, mode=0o755)
    (tmp_path / "precision_data/npu/debug_0/dump/old.npy").write_bytes(b"x")
    _config.init_precision_data({})
    assert (tmp_path / "precision_data/npu/debug_0/dump/old.npy").read_bytes() == b"x"
    assert stat.S_IMODE(os.stat(tmp_path / "precision_data/npu/debug_0/dump").st_mode) == 0o755


def test_a_directory_that_cannot_be_created_is_reported_and_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "precision_data").mkdir()
    (tmp_path / "precision_data/overflow").write_text("a file where a directory should be")
    env: dict[str, str] = {}
    _config.init_precision_data(env)
    out = capsys.readouterr().out
    assert out.startswith("[PrecisionTool] Failed to create precision_data/overflow/dump. ")
    assert out.count("\n") == 1
    assert (tmp_path / "precision_data/npu/debug_0/prof").is_dir()  # the others still made
    assert env == ENV


def test_defaults_write_the_process_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ENV:
        monkeypatch.setenv(name, "before")  # recorded, so the test's values are undone after it
    _config.init_precision_data()
    assert {name: os.environ[name] for name in ENV} == ENV


def test_scripts_import_config_beside_tf_config(tmp_path, monkeypatch):
    # ModelZoo scripts (PRSR, ConvLSTM, tprnn) do `import precision_tool.config as CONFIG` and
    # read CONFIG.ROOT_DIR; the import failed under tf2npu run (ModuleNotFoundError).
    import importlib
    import sys

    from tf2npu.compat.shims import fallback

    monkeypatch.chdir(tmp_path)
    with fallback.fallback_imports():
        config = importlib.import_module("precision_tool.config")
        values = {name: getattr(config, name) for name in config.__all__}
    assert "precision_tool.config" not in sys.modules
    assert values == {
        "ASCEND_LOG_PATH": "/root/ascend/log/plog/",
        "CMD_ROOT_PATH": "/usr/local/Ascend/",
        "DATA_ROOT_DIR": "precision_data",
        "DEFAULT_NPU_DIR": "precision_data/npu/debug_0",
        "DEFAULT_NPU_DUMP_DIR": "precision_data/npu/debug_0/dump",
        "DEFAULT_NPU_GRAPH_DIR": "precision_data/npu/debug_0/graph",
        "DEFAULT_OP_DEBUG_DIR": "precision_data/npu/debug_0",
        "DUMP_GE_GRAPH_VALUE": 2,
        "DUMP_GRAPH_LEVEL_VALUE": 3,
        "DUMP_SEED": 2022,
        "LOG_LEVEL": "NOTSET",
        "NPU_OVERFLOW_DUMP_DIR": "precision_data/overflow/dump",
        "OP_DEBUG_LEVEL": 4,
        "PRECISION_TOOL_DUMP_FLAG": "PRECISION_TOOL_DUMP",
        "PRECISION_TOOL_OVERFLOW_FLAG": "PRECISION_TOOL_OVERFLOW",
        "ROOT_DIR": "",
        "TF_DEBUG_DUMP_DIR": "precision_data/tf/tf_debug",
        "TF_DUMP_STEP": "0",
    }
    assert list(tmp_path.iterdir()) == []  # plain constants: nothing is created
