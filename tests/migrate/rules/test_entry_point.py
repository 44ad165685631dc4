"""entry_point: init_resource / shutdown_resource / close_session where the script really runs."""

import ast

import pytest

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import apply_edits
from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import Distributed, MigrateOptions
from tf2npu.migrate.rules._main_block import main_block, wrap_main_block
from tf2npu.migrate.source import SourceFile
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

NPU = "from npu_bridge.npu_init import *\n"
TF = "import tensorflow as tf\n"
HVD = "import horovod.tensorflow as hvd\n"
MAIN = "def main(_):\n    print(hvd.rank())\n\n\n"
MAIN_AFTER = "def main(_):\n    print(get_rank_id())\n\n\n"
ENTRY = MigrateOptions(entry="t.py")


def wrapped(body: str, indent: str = "    ") -> str:
    """The expected block: ``body`` lines (already indented once) inside the wrapper."""
    inner = "".join(indent + line + "\n" if line else "\n" for line in body.split("\n")[:-1])
    return (
        'if __name__ == "__main__":\n'
        f"{indent}(npu_sess, npu_shutdown) = init_resource()\n"
        f"{indent}try:\n{inner}"
        f"{indent}finally:\n"
        f"{indent * 2}shutdown_resource(npu_sess, npu_shutdown)\n"
        f"{indent * 2}close_session(npu_sess)\n"
    )


@pytest.mark.parametrize(
    "run",
    ["tf.app.run(main)", "tf.compat.v1.app.run(main=main)", "absl_app.run(main)", "main(None)"],
)
def test_horovod_script_main_block_is_wrapped(run):
    imports = TF + "from absl import app as absl_app\n" + HVD
    before = imports + MAIN + f'if __name__ == "__main__":\n    {run}\n'
    after = NPU + TF + "from absl import app as absl_app\n" + MAIN_AFTER + wrapped(f"    {run}\n")
    migrated = assert_migrates(before, after)
    [info] = rule_findings(migrated, "entry_point")
    assert info.severity is Severity.INFO and info.line == 8


def test_removed_horovod_init_inside_the_block():
    before = TF + HVD + MAIN + 'if __name__ == "__main__":\n    hvd.init()\n    tf.app.run(main)\n'
    after = NPU + TF + MAIN_AFTER + wrapped("    tf.app.run(main)\n")
    assert_migrates(before, after)


def test_body_with_comments_nesting_strings_and_else():
    body = (
        "    # parse the flags\n"
        "    flags = parse(\n"
        "  '--x')\n"  # a continuation line less indented than the block
        "    doc = '''line\n"
        "    kept as data'''\n"
        "\n"
        "    for i in range(2):\n"
        "        main(i)\n"
    )
    before = HVD + MAIN + 'if __name__ == "__main__":\n' + body + "else:\n    pass\n"
    after = (
        NPU
        + MAIN_AFTER
        + (
            'if __name__ == "__main__":\n'
            "    (npu_sess, npu_shutdown) = init_resource()\n"
            "    try:\n"
            "        # parse the flags\n"
            "        flags = parse(\n"
            "  '--x')\n"
            "        doc = '''line\n"
            "    kept as data'''\n"
            "\n"
            "        for i in range(2):\n"
            "            main(i)\n"
            "    finally:\n"
            "        shutdown_resource(npu_sess, npu_shutdown)\n"
            "        close_session(npu_sess)\n"
            "else:\n    pass\n"
        )
    )
    assert_migrates(before, after)


@pytest.mark.parametrize("indent", ["\t", "  "])
def test_the_files_own_indentation_unit(indent):
    before = (
        HVD
        + "def main(_):\n"
        + indent
        + "print(hvd.rank())\n"
        + (f"if '__main__' == __name__:\n{indent}main(1)\n")
    )
    after = (
        NPU
        + "def main(_):\n"
        + indent
        + "print(get_rank_id())\n"
        + wrapped(f"{indent}main(1)\n", indent).replace(
            'if __name__ == "__main__":', "if '__main__' == __name__:"
        )
    )
    assert_migrates(before, after)


def test_crlf_and_no_final_newline():
    before = (HVD + MAIN + 'if __name__ == "__main__":\n    main(1)').replace("\n", "\r\n")
    after = (NPU + MAIN_AFTER + wrapped("    main(1)\n")).replace("\n", "\r\n")
    assert_migrates(before, after)


def test_the_wrapper_runs_its_cleanup_when_the_script_exits():
    """tf.app.run ends with sys.exit: the shutdown must still run (code after it never does)."""
    migrated = migrate_text(TF + HVD + MAIN + 'if __name__ == "__main__":\n    tf.app.run(main)\n')
    code = migrated.output.decode().replace(NPU, "").replace(TF, "")
    calls = []

    class App:
        @staticmethod
        def run(main):
            main(None)
            raise SystemExit(0)

    stubs = {
        "__name__": "__main__",
        "tf": type("tf", (), {"app": App}),
        "init_resource": lambda: calls.append("init") or ("sess", "op"),
        "get_rank_id": lambda: calls.append("rank") or 0,
        "shutdown_resource": lambda sess, op: calls.append(f"shutdown {sess} {op}"),
        "close_session": lambda sess: calls.append(f"close {sess}"),
    }
    with pytest.raises(SystemExit):
        exec(compile(code, "t.py", "exec"), stubs)
    assert calls == ["init", "rank", "shutdown sess op", "close sess"]


# -- when it applies ---------------------------------------------------------------------------
def test_already_initialised_block_is_left_alone():
    source = (
        NPU
        + TF
        + (
            'if __name__ == "__main__":\n'
            "    (npu_sess, npu_shutdown) = init_resource()\n"
            "    tf.app.run(main)\n"
        )
    )
    migrated = migrate_text(source, ENTRY)
    assert migrated.output == source.encode()
    assert not rule_findings(migrated, "entry_point")


@pytest.mark.parametrize("distributed", list(Distributed))
def test_entry_file_always_gets_the_resources(distributed):
    before = TF + 'if __name__ == "__main__":\n    tf.app.run()\n'
    after = NPU + TF + wrapped("    tf.app.run()\n")
    assert_migrates(before, after, MigrateOptions(entry="t.py", distributed=distributed), "t.py")


def test_non_entry_file_without_distribution_gets_nothing():
    source = TF + 'if __name__ == "__main__":\n    tf.app.run()\n'
    migrated = migrate_text(source, MigrateOptions(entry="other.py"))
    assert migrated.output == source.encode()
    assert not rule_findings(migrated, "entry_point")


@pytest.mark.parametrize("distributed", [Distributed.HOROVOD, Distributed.TF_STRATEGY])
def test_explicit_distributed_mode_wraps_tf_scripts(distributed):
    options = MigrateOptions(distributed=distributed)
    before = TF + 'if __name__ == "__main__":\n    tf.app.run()\n'
    assert_migrates(before, NPU + TF + wrapped("    tf.app.run()\n"), options)
    plain = 'import sys\nif __name__ == "__main__":\n    sys.exit(0)\n'
    assert migrate_text(plain, options).output == plain.encode()


def test_horovod_library_file_without_main_block_is_reported():
    migrated = migrate_text(HVD + "def rank():\n    return hvd.rank()\n")
    [warning] = rule_findings(migrated, "entry_point")
    assert warning.severity is Severity.WARNING and "--entry" in warning.fix
    named = migrate_text(HVD + "def rank():\n    return hvd.rank()\n", MigrateOptions(entry="x.py"))
    assert not rule_findings(named, "entry_point")


def test_one_line_block_is_reported():
    source = TF + 'if __name__ == "__main__": tf.app.run()\n'
    migrated = migrate_text(source, ENTRY)
    assert migrated.output == source.encode()
    [warning] = rule_findings(migrated, "entry_point")
    assert warning.severity is Severity.WARNING and "init_resource()" in warning.fix


# -- an entry file without a __main__ block ----------------------------------------------------
AT_EXIT = (
    "(npu_sess, npu_shutdown) = init_resource()\n"
    "atexit.register(close_session, npu_sess)\n"
    "atexit.register(shutdown_resource, npu_sess, npu_shutdown)\n"
)


def test_entry_without_main_block_uses_atexit():
    head = '"""Doc."""\nfrom __future__ import print_function\n'
    before = head + "import sys\n" + TF + "\ntf.app.run()\n"
    after = head + NPU + "import atexit\nimport sys\n" + TF + AT_EXIT + "\ntf.app.run()\n"
    migrated = assert_migrates(before, after, ENTRY)
    [info] = rule_findings(migrated, "entry_point")
    assert "atexit" in info.message


def test_entry_without_main_block_after_import_blocks_and_existing_atexit():
    before = (
        "import atexit\n" + TF + "try:\n    import horovod.tensorflow as hvd\n"
        "except ImportError:\n    import stub as hvd\ntrain(hvd.size())\n"
    )
    after = (
        NPU
        + "import atexit\n"
        + TF  # the optional-Horovod try goes whole (horovod rule)
        + AT_EXIT
        + "train(get_rank_size())\n"
    )
    assert_migrates(before, after, ENTRY)


def test_entry_without_imports_is_reported():
    migrated = migrate_text("print(1)\n", ENTRY)
    assert migrated.output == b"print(1)\n"
    [warning] = rule_findings(migrated, "entry_point")
    assert warning.severity is Severity.WARNING


# -- sharing the __main__ block with another rule (keras_session uses the same helper) ---------
def _context(text: str) -> FileContext:
    tree = ast.parse(text)
    source = SourceFile.decode(text.encode())
    return FileContext("t.py", source, tree, ModuleIndex.build(tree), MigrateOptions())


def test_two_rules_wrapping_one_block_nest_without_overlap():
    ctx = _context('import x\nif __name__ == "__main__":\n    main()\n')
    block = main_block(ctx)
    assert block is not None
    assert wrap_main_block(ctx, "keras_session", block, ["k = keras_setup()"], ["keras_close(k)"])
    assert wrap_main_block(ctx, "entry_point", block, ["s = init()"], ["shutdown(s)"])
    assert len(ctx.patches) == 3
    text = apply_edits(ctx.text, [e for p in ctx.patches for e in p.edits])
    assert text == (
        'import x\nif __name__ == "__main__":\n'
        "    s = init()\n    k = keras_setup()\n    try:\n        main()\n"
        "    finally:\n        keras_close(k)\n        shutdown(s)\n"
    )


def test_main_block_is_module_level_only():
    ctx = _context(
        'def f():\n    if __name__ == "__main__":\n        pass\n'
        'if __name__ != "__main__":\n    pass\n'
    )
    assert main_block(ctx) is None


def test_lines_another_rule_adds_inside_the_body_stop_the_wrap():
    ctx = _context('import x\nif __name__ == "__main__":\n    main()\n')
    block = main_block(ctx)
    assert block is not None
    last = block.body[-1]
    edit = ctx.insert_lines_after(last, ["close(k)"])
    assert edit is not None and ctx.patch("other", last, [edit])
    assert not wrap_main_block(ctx, "entry_point", block, ["s = init()"], ["shutdown(s)"])
    assert len(ctx.patches) == 1
