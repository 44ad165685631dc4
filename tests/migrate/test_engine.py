"""The engine: bad input is passed through, imports and helpers are placed once, bytes are kept.

Most tests run the engine with small fake rules (installed with ``monkeypatch``) so that they
check the engine alone; the helper test runs the real ``session_config`` rule.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import ClassVar

import pytest

from tf2npu.migrate import engine
from tf2npu.migrate.context import FileContext
from tf2npu.migrate.engine import Migrated, migrate_source
from tf2npu.migrate.model import Change, FileStatus, Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.rule import REGISTRY, Rule

CONFIGURE = "fake_configure"


class Configure(Rule):
    """Adds ``config=npu_config_proto()`` to every ``tf.Session()`` (needs the npu import)."""

    name: ClassVar[str] = CONFIGURE

    def apply(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to("tf.Session"):
            assert ref.call is not None
            if ctx.keyword(ref.call, "config") is not None:
                continue
            edit = ctx.add_keyword(ref.call, "config", "npu_config_proto()")
            if ctx.patch(self.name, ref.call, [edit]):
                ctx.need_import()


class RenameSession(Rule):
    """Replaces the ``tf.Session`` callee: overlaps nothing of Configure, but all of Replace."""

    name: ClassVar[str] = "fake_rename"

    def apply(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to("tf.Session"):
            ctx.patch(self.name, ref.node, [ctx.replace(ref.node, "NPUSession")])


class ReplaceCall(Rule):
    """Replaces whole ``tf.Session(...)`` calls."""

    name: ClassVar[str] = "fake_replace"

    def apply(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to("tf.Session"):
            assert ref.call is not None
            ctx.patch(self.name, ref.call, [ctx.replace(ref.call, "make_session()")])


class Broken(Rule):
    """A buggy rule: its edit leaves an unclosed parenthesis."""

    name: ClassVar[str] = "fake_broken"

    def apply(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to("tf.Session"):
            assert ref.call is not None
            ctx.patch(self.name, ref.call, [ctx.replace(ref.call, "tf.Session(")])
            ctx.finding(self.name, ref.call, Severity.INFO, "seen")


class Report(Rule):
    """Only reports: findings without patches never change the file."""

    name: ClassVar[str] = "fake_report"

    def apply(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to("tf.Session"):
            ctx.finding(self.name, ref.node, Severity.WARNING, "a session", "configure it")


Install = Callable[..., None]


@pytest.fixture
def rules(monkeypatch: pytest.MonkeyPatch) -> Install:
    """Run the engine with exactly the given rule classes, in the given order."""

    def install(*classes: type[Rule]) -> None:
        monkeypatch.setattr(engine, "RULE_ORDER", tuple(c.name for c in classes))
        for cls in classes:
            monkeypatch.setitem(REGISTRY, cls.name, cls)

    return install


def run(raw: bytes, options: MigrateOptions | None = None, *, diff: bool = False) -> Migrated:
    return migrate_source(raw, "t.py", options, diff=diff)


def text(migrated: Migrated) -> str:
    return migrated.output.decode("utf-8")


# -- input that cannot be migrated --------------------------------------------------------------
def test_syntax_error_fails_with_position_and_keeps_the_bytes(rules: Install) -> None:
    rules(Configure)
    raw = b"import tensorflow as tf\nx = (\nsess = tf.Session()\n"
    migrated = run(raw)
    assert migrated.result.status is FileStatus.FAILED
    assert migrated.result.reason == "syntax error at line 2, column 5: '(' was never closed"
    assert migrated.output == raw
    assert migrated.result.lines == 3
    assert migrated.result.changes == ()


@pytest.mark.parametrize(
    "raw",
    [
        b'print "hello"\n',
        b"import os\nprint 'x', os.name\n",
        b"try:\n    pass\nexcept Exception, e:\n    pass\n",
    ],
)
def test_python2_code_is_reported_as_python2(rules: Install, raw: bytes) -> None:
    rules(Configure)
    migrated = run(raw)
    assert migrated.result.status is FileStatus.FAILED
    assert migrated.result.reason.startswith("syntax error at line ")
    assert "this looks like Python 2 code" in migrated.result.reason
    assert "2to3" in migrated.result.reason
    assert migrated.output == raw


def test_plain_syntax_error_has_no_python2_hint(rules: Install) -> None:
    rules(Configure)
    reason = run(b"def f(:\n    pass\n").result.reason
    assert reason.startswith("syntax error at line 1, column 7: ")
    assert "Python 2" not in reason


def test_null_byte_fails_without_a_bogus_position(rules: Install) -> None:
    rules(Configure)
    raw = b"import tensorflow as tf\nx = 1\x00\n"
    migrated = run(raw)
    assert migrated.result.status is FileStatus.FAILED
    assert "null bytes" in migrated.result.reason
    assert "None" not in migrated.result.reason
    assert migrated.output == raw
    assert migrated.result.lines == 2


def test_undecodable_file_fails_naming_the_encoding(rules: Install) -> None:
    rules(Configure)
    raw = b"import tensorflow as tf\ns = '\xff'\n"
    migrated = run(raw)
    assert migrated.result.status is FileStatus.FAILED
    assert migrated.result.reason.startswith("cannot decode as utf-8: ")
    assert migrated.output == raw


def test_bad_cookie_fails(rules: Install) -> None:
    rules(Configure)
    raw = b"# coding: nonsense\nx = 1"
    migrated = run(raw)
    assert migrated.result.status is FileStatus.FAILED
    assert migrated.result.reason == "bad encoding declaration: unknown encoding: nonsense"
    assert migrated.output == raw
    assert migrated.result.lines == 2


def test_a_rewrite_that_would_not_parse_is_reported_at_its_line_in_the_file(
    rules: Install,
) -> None:
    # Only the touched statement is checked first; the error still names the file's line.
    rules(Broken)
    raw = b"import tensorflow as tf\n\n\ndef f():\n    return 1\n\n\nsess = tf.Session()\n"
    migrated = run(raw)
    assert migrated.result.status is FileStatus.FAILED
    assert migrated.result.reason.startswith("internal error: the rewrite would not parse (")
    assert ", line 8); " in migrated.result.reason
    assert migrated.output == raw


def test_a_rewrite_that_would_not_parse_fails_and_keeps_the_input(rules: Install) -> None:
    rules(Broken)
    raw = b"import tensorflow as tf\nsess = tf.Session()\n"
    migrated = run(raw)
    assert migrated.result.status is FileStatus.FAILED
    assert migrated.result.reason.startswith("internal error: the rewrite would not parse (")
    assert "please report this file" in migrated.result.reason
    assert migrated.output == raw
    assert migrated.result.changes == ()
    assert [f.rule for f in migrated.result.findings] == ["fake_broken"]


# -- files that need nothing --------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\n\n",
        b"import os\nprint(os.name)\n",
        b"import tensorflow as tf\nx = tf.constant(1)  # no session here\n",
        b"session = Session()\nmodel.Session()\n",
    ],
)
def test_file_needing_nothing_is_unchanged(rules: Install, raw: bytes) -> None:
    rules(Configure)
    migrated = run(raw)
    assert migrated.result.status is FileStatus.UNCHANGED
    assert migrated.output == raw
    assert migrated.result.changes == ()
    assert b"npu_bridge" not in migrated.output


def test_findings_alone_leave_the_file_unchanged(rules: Install) -> None:
    rules(Report)
    raw = b"import tensorflow as tf\nsess = tf.Session()\n"
    migrated = run(raw)
    assert migrated.result.status is FileStatus.UNCHANGED
    assert migrated.output == raw
    [finding] = migrated.result.findings
    assert (finding.line, finding.col, finding.severity) == (2, 8, Severity.WARNING)


def test_real_rules_leave_a_plain_script_byte_identical() -> None:
    raw = (
        b"#!/usr/bin/env python\r\n# -*- coding: utf-8 -*-\r\n"
        b"import os\r\n\r\nprint(os.getcwd())\r\n"
    )
    migrated = run(raw)
    assert migrated.result.status is FileStatus.UNCHANGED
    assert migrated.output == raw


# -- where the import goes ----------------------------------------------------------------------
def test_import_after_shebang_cookie_docstring_and_future_imports(rules: Install) -> None:
    rules(Configure)
    raw = (
        b"#!/usr/bin/env python\n"
        b"# -*- coding: utf-8 -*-\n"
        b'"""Train a model.\n'
        b"\n"
        b'Details."""\n'
        b"from __future__ import absolute_import\n"
        b"from __future__ import print_function\n"
        b"\n"
        b"# Imports.\n"
        b"import tensorflow as tf\n"
        b"sess = tf.Session()\n"
    )
    assert text(run(raw)) == (
        "#!/usr/bin/env python\n"
        "# -*- coding: utf-8 -*-\n"
        '"""Train a model.\n'
        "\n"
        'Details."""\n'
        "from __future__ import absolute_import\n"
        "from __future__ import print_function\n"
        "\n"
        "# Imports.\n"
        "from npu_bridge.npu_init import *\n"
        "import tensorflow as tf\n"
        "sess = tf.Session(config=npu_config_proto())\n"
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "import tensorflow as tf\nsess = tf.Session()\n",
            "from npu_bridge.npu_init import *\n"
            "import tensorflow as tf\nsess = tf.Session(config=npu_config_proto())\n",
        ),
        (
            '"""Doc."""\nimport tensorflow as tf\nsess = tf.Session()\n',
            '"""Doc."""\nfrom npu_bridge.npu_init import *\n'
            "import tensorflow as tf\nsess = tf.Session(config=npu_config_proto())\n",
        ),
        (
            "# License header\n\nimport tensorflow as tf\nsess = tf.Session()\n",
            "# License header\n\nfrom npu_bridge.npu_init import *\n"
            "import tensorflow as tf\nsess = tf.Session(config=npu_config_proto())\n",
        ),
        (
            "from __future__ import division; import tensorflow as tf\nsess = tf.Session()\n",
            "from __future__ import division; import tensorflow as tf\n"
            "from npu_bridge.npu_init import *\nsess = tf.Session(config=npu_config_proto())\n",
        ),
        (
            "from __future__ import division\nif True:\n    import tensorflow as tf\n"
            "sess = tf.Session()\n",
            "from __future__ import division\nfrom npu_bridge.npu_init import *\nif True:\n"
            "    import tensorflow as tf\nsess = tf.Session(config=npu_config_proto())\n",
        ),
        (
            "def main():\n    import tensorflow as tf\n    return tf.Session()\n",
            "from npu_bridge.npu_init import *\ndef main():\n    import tensorflow as tf\n"
            "    return tf.Session(config=npu_config_proto())\n",
        ),
        (
            '"""Doc."""\nfrom __future__ import division\ndef main():\n'
            "    import tensorflow as tf\n    return tf.Session()",
            '"""Doc."""\nfrom __future__ import division\nfrom npu_bridge.npu_init import *\n'
            "def main():\n    import tensorflow as tf\n"
            "    return tf.Session(config=npu_config_proto())",
        ),
    ],
)
def test_import_position(rules: Install, before: str, after: str) -> None:
    rules(Configure)
    assert text(run(before.encode())) == after


def test_import_after_a_docstring_that_is_the_last_statement_without_newline(
    rules: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only imports requested: the file is a docstring and a ``from __future__`` import.
    class NeedImport(Rule):
        name: ClassVar[str] = "fake_need_import"

        def apply(self, ctx: FileContext) -> None:
            ctx.need_import()

    rules(NeedImport)
    assert text(run(b'"""Doc."""\nfrom __future__ import division')) == (
        '"""Doc."""\nfrom __future__ import division\nfrom npu_bridge.npu_init import *\n'
    )
    assert text(run(b'"""Doc."""')) == '"""Doc."""\nfrom npu_bridge.npu_init import *\n'


@pytest.mark.parametrize(
    "existing",
    [
        "from npu_bridge.npu_init import *",
        "from  npu_bridge.npu_init  import  *",
        "from npu_bridge.npu_init import *  # NPU",
    ],
)
def test_import_not_duplicated_when_present(rules: Install, existing: str) -> None:
    rules(Configure)
    before = f"import tensorflow as tf\n{existing}\nsess = tf.Session()\n"
    migrated = run(before.encode())
    assert text(migrated) == (
        f"import tensorflow as tf\n{existing}\nsess = tf.Session(config=npu_config_proto())\n"
    )
    assert [c.rule for c in migrated.result.changes] == [CONFIGURE]


def test_import_added_once_for_many_patches(rules: Install) -> None:
    rules(Configure)
    before = b"import tensorflow as tf\na = tf.Session()\nb = tf.Session()\n"
    assert text(run(before)).count("from npu_bridge.npu_init import *") == 1


def test_migrated_output_is_stable(rules: Install) -> None:
    rules(Configure)
    first = run(b"import tensorflow as tf\nsess = tf.Session()\n")
    second = run(first.output)
    assert second.result.status is FileStatus.UNCHANGED
    assert second.output == first.output


# -- bytes outside the edits --------------------------------------------------------------------
def test_crlf_file_stays_crlf_including_inserted_lines(rules: Install) -> None:
    rules(Configure)
    raw = b'"""Doc."""\r\nimport tensorflow as tf\r\n\r\nsess = tf.Session(\r\n    "",\r\n)\r\n'
    migrated = run(raw)
    assert migrated.output == (
        b'"""Doc."""\r\nfrom npu_bridge.npu_init import *\r\nimport tensorflow as tf\r\n\r\n'
        b'sess = tf.Session(\r\n    "",\r\n    config=npu_config_proto(),\r\n)\r\n'
    )
    assert b"\n" not in migrated.output.replace(b"\r\n", b"")


def test_cr_only_file_stays_cr(rules: Install) -> None:
    rules(Configure)
    migrated = run(b"import tensorflow as tf\rsess = tf.Session()\r")
    assert migrated.output == (
        b"from npu_bridge.npu_init import *\rimport tensorflow as tf\r"
        b"sess = tf.Session(config=npu_config_proto())\r"
    )


def test_bom_is_kept(rules: Install) -> None:
    rules(Configure)
    migrated = run(b"\xef\xbb\xbfimport tensorflow as tf\nsess = tf.Session()\n")
    assert migrated.output == (
        b"\xef\xbb\xbffrom npu_bridge.npu_init import *\nimport tensorflow as tf\n"
        b"sess = tf.Session(config=npu_config_proto())\n"
    )


def test_latin1_file_keeps_its_encoding(rules: Install) -> None:
    rules(Configure)
    before = "# -*- coding: latin-1 -*-\nimport tensorflow as tf\n# café\nsess = tf.Session('é')\n"
    migrated = run(before.encode("latin-1"))
    assert migrated.result.status is FileStatus.MIGRATED
    assert migrated.output == (
        "# -*- coding: latin-1 -*-\nfrom npu_bridge.npu_init import *\nimport tensorflow as tf\n"
        "# café\nsess = tf.Session('é', config=npu_config_proto())\n"
    ).encode("latin-1")


def test_non_ascii_before_the_edit_on_the_same_line(rules: Install) -> None:
    rules(Configure)
    before = "import tensorflow as tf\nname = '日本'; sess = tf.Session()  # é\n"
    assert text(run(before.encode())) == (
        "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
        "name = '日本'; sess = tf.Session(config=npu_config_proto())  # é\n"
    )


def test_tabs_and_comments_are_kept(rules: Install) -> None:
    rules(Configure)
    before = (
        "import tensorflow as tf\n"
        "def main():\n"
        "\t# make a session\n"
        "\tsess = tf.Session(\n"
        "\t\t'',  # target\n"
        "\t)\n"
    )
    assert text(run(before.encode())) == (
        "from npu_bridge.npu_init import *\n"
        "import tensorflow as tf\n"
        "def main():\n"
        "\t# make a session\n"
        "\tsess = tf.Session(\n"
        "\t\t'', config=npu_config_proto(),  # target\n"
        "\t)\n"
    )


# -- patches, changes, findings -----------------------------------------------------------------
def test_changes_record_before_and_after(rules: Install) -> None:
    rules(Configure)
    migrated = run(b"import tensorflow as tf\nsess = tf.Session()\n")
    assert migrated.result.status is FileStatus.MIGRATED
    assert migrated.result.lines == 2
    assert migrated.result.changes == (
        Change("t.py", 1, 1, "npu_import", "", "from npu_bridge.npu_init import *\n"),
        Change("t.py", 2, 8, CONFIGURE, "tf.Session()", "tf.Session(config=npu_config_proto())"),
    )


def test_overlapping_patches_keep_the_earlier_rule_and_rerun(rules: Install) -> None:
    rules(ReplaceCall, RenameSession, Configure)
    migrated = run(b"import tensorflow as tf\nsess = tf.Session()\n")
    # The earlier rule wins; a second pass over its result finds nothing left for the others.
    assert text(migrated) == (
        "from npu_bridge.npu_init import *\nimport tensorflow as tf\nsess = make_session()\n"
    )
    assert not any("overlaps" in f.message for f in migrated.result.findings)


def test_a_dropped_patch_is_applied_by_the_next_pass() -> None:
    before = "import tensorflow as tf\nwith tf.device('/gpu:0'):\n    y = tf.nn.gelu(\n        x)\n"
    first = migrate_source(before.encode(), "t.py")
    assert first.output.decode() == (
        "from npu_bridge.npu_init import *\nimport tensorflow as tf\ny = npu_unary_ops.gelu(x)\n"
    )
    assert {c.rule for c in first.result.changes} == {"npu_import", "device_scope", "gelu"}
    assert not any("overlaps" in f.message for f in first.result.findings)
    assert migrate_source(first.output, "t.py").output == first.output


def test_non_overlapping_patches_of_two_rules_both_apply(rules: Install) -> None:
    rules(RenameSession, Configure)
    migrated = run(b"import tensorflow as tf\nsess = tf.Session()\n")
    assert text(migrated) == (
        "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
        "sess = NPUSession(config=npu_config_proto())\n"
    )
    assert migrated.result.findings == ()


def test_findings_are_sorted_by_position(rules: Install) -> None:
    rules(Report)
    migrated = run(
        b"import tensorflow as tf\nb = tf.Session(); a = tf.Session()\nc = tf.Session()\n"
    )
    assert [(f.line, f.col) for f in migrated.result.findings] == [(2, 5), (2, 23), (3, 5)]


def test_unregistered_rule_names_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "RULE_ORDER", ("no_such_rule",))
    migrated = run(b"import tensorflow as tf\nsess = tf.Session()\n")
    assert migrated.result.status is FileStatus.UNCHANGED


# -- diff ---------------------------------------------------------------------------------------
def test_diff_is_a_unified_diff(rules: Install) -> None:
    rules(Configure)
    migrated = run(b"import tensorflow as tf\nsess = tf.Session()\n", diff=True)
    assert migrated.result.diff == (
        "--- a/t.py\n"
        "+++ b/t.py\n"
        "@@ -1,2 +1,3 @@\n"
        "+from npu_bridge.npu_init import *\n"
        " import tensorflow as tf\n"
        "-sess = tf.Session()\n"
        "+sess = tf.Session(config=npu_config_proto())\n"
    )


def test_no_diff_unless_asked_or_when_unchanged(rules: Install) -> None:
    rules(Configure)
    assert run(b"import tensorflow as tf\nsess = tf.Session()\n").result.diff == ""
    assert run(b"x = 1\n", diff=True).result.diff == ""


# -- helper definitions (real session_config rule) ----------------------------------------------
HELPER = (
    "def npu_session_config(config_proto=None):\n"
    '    """npu_config_proto() plus the NPU options chosen when migrating (added by tf2npu)."""\n'
    "    config_proto = npu_config_proto(config_proto=config_proto)\n"
    "    for custom_op in config_proto.graph_options.rewrite_options.custom_optimizers:\n"
    '        if custom_op.name == "NpuOptimizer":\n'
    "            custom_op.parameter_map[\"precision_mode\"].s = b'force_fp16'\n"
    "    return config_proto\n"
)
FP16 = MigrateOptions(precision_mode="force_fp16")


def test_helper_inserted_once_after_the_imports() -> None:
    before = (
        '"""Doc."""\n'
        "import os\n"
        "import tensorflow as tf\n"
        "\n"
        "sess = tf.Session()\n"
        "other = tf.Session(config=cfg)\n"
    )
    first = run(before.encode(), FP16)
    assert text(first) == (
        '"""Doc."""\n'
        "from npu_bridge.npu_init import *\n"
        "import os\n"
        "import tensorflow as tf\n"
        "\n\n" + HELPER + "\n\n"
        "sess = tf.Session(config=npu_session_config())\n"
        "other = tf.Session(config=npu_session_config(config_proto=cfg))\n"
    )
    assert text(first).count("def npu_session_config") == 1
    second = run(first.output, FP16)
    assert second.result.status is FileStatus.UNCHANGED
    assert second.output == first.output


def test_helper_after_an_import_block_in_try_except() -> None:
    before = (
        "try:\n    import tensorflow.compat.v1 as tf\nexcept ImportError:\n"
        "    import tensorflow as tf\nsess = tf.Session()\n"
    )
    out = text(run(before.encode(), FP16))
    assert out == (
        "from npu_bridge.npu_init import *\n"
        "try:\n    import tensorflow.compat.v1 as tf\nexcept ImportError:\n"
        "    import tensorflow as tf\n\n\n" + HELPER + "\n"
        "sess = tf.Session(config=npu_session_config())\n"
    )
    assert run(out.encode(), FP16).output == out.encode()


def test_helper_in_a_crlf_file_is_crlf() -> None:
    migrated = run(b"import tensorflow as tf\r\nsess = tf.Session()\r\n", FP16)
    assert (
        migrated.output
        == (
            "from npu_bridge.npu_init import *\r\nimport tensorflow as tf\r\n\r\n\r\n"
            + HELPER.replace("\n", "\r\n")
            + "\r\nsess = tf.Session(config=npu_session_config())\r\n"
        ).encode()
    )


def test_helper_already_defined_is_not_added() -> None:
    before = (
        "import tensorflow as tf\n"
        "def npu_session_config(config_proto=None):\n    return config_proto\n"
        "sess = tf.Session()\n"
    )
    out = text(run(before.encode(), FP16))
    assert out.count("def npu_session_config") == 1
    assert out.endswith("sess = tf.Session(config=npu_session_config())\n")


def test_no_helper_without_npu_options() -> None:
    out = text(run(b"import tensorflow as tf\nsess = tf.Session()\n"))
    assert "npu_session_config" not in out


@pytest.mark.slow
def test_a_very_large_file_is_migrated() -> None:
    block = (
        "def step_{i}(x):\n"
        "    # layer {i}\n"
        "    h = tf.nn.dropout(x, rate=0.1)\n"
        "    return tf.layers.dense(h, 8)\n\n\n"
    )
    body = "".join(block.format(i=i) for i in range(8000))
    source = "import tensorflow as tf\n\n\n" + body + "sess = tf.Session()\n"
    migrated = migrate_source(source.encode(), "big.py")
    assert migrated.result.status is FileStatus.MIGRATED
    assert migrated.result.lines == source.count("\n")
    out = migrated.output.decode()
    assert out.count("npu_ops.dropout(x, keep_prob=1 - 0.1)") == 8000
    assert out.count("# layer ") == 8000
    ast.parse(out)


def test_users_own_methods_named_like_tf_apis_are_untouched() -> None:
    source = (
        "import tensorflow as tf\n"
        "class Model:\n"
        "    def profile(self, x):\n        return x\n"
        "    def train(self, input_fn=None):\n        return input_fn\n"
        "    def batch(self, n):\n        return n\n"
        "m = Model()\nm.profile(1)\nm.train(input_fn=lambda: 0)\nm.batch(3)\n"
        "x = tf.constant(1)\n"
    )
    migrated = migrate_source(source.encode(), "t.py")
    assert migrated.output == source.encode()
    assert migrated.result.status is FileStatus.UNCHANGED


@pytest.mark.parametrize(
    "raw",
    [
        b"x = " + b"-" * 200_000 + b"1\n",  # the parser's MemoryError has no message
        b"f = " + b"lambda: " * 100_000 + b"1\n",
        b"y = " + b"not " * 100_000 + b"x\n",
    ],
)
def test_deep_nesting_fails_with_a_reason(rules: Install, raw: bytes) -> None:
    rules(Configure)
    migrated = run(raw)
    assert migrated.result.status is FileStatus.FAILED
    assert migrated.result.reason == (
        "expression nesting too deep for Python's parser; copied unchanged"
    )
    assert migrated.output == raw


def test_sources_above_the_limit_are_not_parsed(
    rules: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules(Configure)
    monkeypatch.setattr(engine, "MAX_SOURCE_BYTES", 20)
    raw = b"import tensorflow as tf\nsess = tf.Session()\n"
    monkeypatch.setattr(engine.ast, "parse", None)  # never reached
    migrated = run(raw)
    assert migrated.result.status is FileStatus.FAILED
    assert migrated.result.reason == (
        "not parsed: 44 bytes is above the 20-byte limit for Python sources (parsing needs "
        "100 to 350 times the file size in memory); copied unchanged"
    )
    assert migrated.output == raw


def test_the_documented_limit() -> None:
    assert engine.MAX_SOURCE_BYTES == 4 * 1024 * 1024


def test_a_failure_never_has_an_empty_reason() -> None:
    assert engine._failed(b"x", "a.py", "").result.reason == (
        "unknown failure (please report this file)"
    )
