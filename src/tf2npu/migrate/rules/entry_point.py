"""The script's entry point initialises the NPU resources and shuts them down however it ends."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import Distributed
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._main_block import main_block, wrap_main_block
from tf2npu.migrate.rules._patches import clash

SETUP = ["(npu_sess, npu_shutdown) = init_resource()"]
CLEANUP = ["shutdown_resource(npu_sess, npu_shutdown)", "close_session(npu_sess)"]
# atexit runs the last registered first: shutdown_resource, then close_session.
AT_EXIT = [
    *SETUP,
    "atexit.register(close_session, npu_sess)",
    "atexit.register(shutdown_resource, npu_sess, npu_shutdown)",
]
_WHY = "HCCL must be initialised before the rank queries and collectives run"


def _calls_init_resource(nodes: Iterable[ast.AST]) -> bool:
    """True when the file already initialises the NPU resources itself (or was migrated)."""
    for node in nodes:
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "init_resource":
                return True
            if isinstance(func, ast.Attribute) and func.attr == "init_resource":
                return True
    return False


def _is_import(stmt: ast.stmt) -> bool:
    """An import, or a ``try``/``if`` block of imports (``try: import x except ImportError: ...``).

    ``__future__`` imports do not count: the engine puts the npu_init import right after them.
    """
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        return False
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(stmt, (ast.Try, ast.If)):
        return bool(stmt.body) and all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass))
                                       for s in stmt.body)  # fmt: skip
    return False


@register
class EntryPoint(Rule):
    """Distributed scripts get ``init_resource()`` at their start and the shutdown at their end.

    HCCL (the NPU collectives) must be initialised before ``get_rank_id()`` and friends or any
    all-reduce runs. In files where the ``horovod`` rule migrated Horovod (or every TF file, with
    ``--distributed horovod`` or ``tf_strategy``) and in the ``--entry`` file, the body of the
    ``if __name__ == "__main__":`` block is wrapped::

        (npu_sess, npu_shutdown) = init_resource()
        try:
            <the original body>
        finally:
            shutdown_resource(npu_sess, npu_shutdown)
            close_session(npu_sess)

    so the shutdown also runs when ``tf.app.run(main)`` / ``absl.app.run(main)`` leave through
    ``sys.exit`` (code placed after them never runs). An ``--entry`` file without such a block
    gets ``init_resource()`` after its imports and the shutdown registered with ``atexit``. A
    file that already calls ``init_resource`` is left alone. A file that needs the resources but
    has no ``__main__`` block is reported: name the script that runs with ``--entry``.
    """

    name: ClassVar[str] = "entry_point"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\nimport horovod.tensorflow as hvd\n\n\ndef main(_):\n"
            '    print(hvd.rank())\n\n\nif __name__ == "__main__":\n    hvd.init()\n'
            "    tf.app.run(main)\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n\n\ndef main(_):\n"
            '    print(get_rank_id())\n\n\nif __name__ == "__main__":\n'
            "    (npu_sess, npu_shutdown) = init_resource()\n    try:\n        tf.app.run(main)\n"
            "    finally:\n        shutdown_resource(npu_sess, npu_shutdown)\n"
            "        close_session(npu_sess)\n",
            "a Horovod script started by tf.app.run (which exits through sys.exit)",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        migrated_here = any(p.rule == "horovod" for p in ctx.patches)
        distributed = ctx.options.distributed in (Distributed.HOROVOD, Distributed.TF_STRATEGY)
        wanted = (
            ctx.is_entry
            or migrated_here
            or (distributed and (ctx.index.uses("tf") or ctx.index.uses("hvd")))
        )
        if not wanted or _calls_init_resource(ctx.index.nodes()):
            return
        block = main_block(ctx)
        if block is not None:
            self._wrap(ctx, block)
        elif ctx.is_entry:
            self._module_level(ctx)
        elif migrated_here and ctx.options.entry is None:
            ctx.finding(self.name, None, Severity.WARNING,
                        "Horovod was migrated in this file, but it has no "
                        "`if __name__ == \"__main__\":` block to initialise the NPU resources in",
                        "name the script that starts training with --entry (it then gets "
                        "init_resource() / shutdown_resource()), or add them by hand")  # fmt: skip

    def _wrap(self, ctx: FileContext, block: ast.If) -> None:
        if wrap_main_block(ctx, self.name, block, SETUP, CLEANUP):
            ctx.need_import()
            ctx.finding(
                self.name,
                block,
                Severity.INFO,
                "init_resource() added at the start of the __main__ block and "
                f"shutdown_resource() / close_session() in a finally at its end: {_WHY}",
            )
            return  # fmt: skip
        ctx.finding(self.name, block, Severity.WARNING,
                    "could not add init_resource() / shutdown_resource() to this __main__ block "
                    "(a one-line block, or another rewrite changes the same lines)",
                    "start the block with `(npu_sess, npu_shutdown) = init_resource()` and run "
                    "its body in try: ... finally: shutdown_resource(npu_sess, npu_shutdown); "
                    "close_session(npu_sess)")  # fmt: skip

    def _module_level(self, ctx: FileContext) -> None:
        """The entry file runs its training at module level: init after the imports, atexit."""
        imports = [s for s in ctx.tree.body if _is_import(s)]
        if not imports:
            # Before the first statement is where the engine adds the npu_init import: the
            # call would come first. A script without imports does not use TensorFlow anyway.
            ctx.finding(
                self.name,
                None,
                Severity.WARNING,
                "the entry script imports nothing: init_resource() not added",
                "add `(npu_sess, npu_shutdown) = init_resource()` where training starts",
            )
            return  # fmt: skip
        anchor = imports[-1]
        edit = ctx.insert_lines_after(anchor, AT_EXIT, indent="")
        if edit is None or clash(ctx, [edit]) or not ctx.patch(self.name, anchor, [edit]):
            ctx.finding(
                self.name,
                anchor,
                Severity.WARNING,
                "could not add init_resource() after the imports of the entry script",
                "add `(npu_sess, npu_shutdown) = init_resource()` after the imports and "
                "shutdown_resource(npu_sess, npu_shutdown) / close_session(npu_sess) at "
                "exit",
            )
            return  # fmt: skip
        ctx.need_import()
        if ctx.index.resolver.resolve_name("atexit", ctx.index.resolver.module) != "atexit":
            ctx.need_import("import atexit")
        ctx.finding(self.name, anchor, Severity.INFO,
                    "init_resource() added after the imports and shutdown_resource() / "
                    f"close_session() registered with atexit (the entry script has no __main__ "
                    f"block, so they run when the interpreter exits): {_WHY}")  # fmt: skip
