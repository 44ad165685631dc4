"""The statements the Horovod migration deletes, and the Horovod imports.

The statement half of the horovod rule (:mod:`tf2npu.migrate.rules.horovod`): a removed
statement leaves ``pass`` when its block would be empty; an optional-Horovod ``try`` goes with its
``except ImportError`` fallback unless later code reads a name the fallback binds.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.index import Ref
from tf2npu.migrate.model import Severity
from tf2npu.migrate.rules._horovod_handles import Handles
from tf2npu.migrate.rules._optional_import import (
    handler_names,
    optional_import_try,
    remove_lines,
    used_after,
)
from tf2npu.migrate.rules._patches import clash, record, removed
from tf2npu.migrate.tables.horovod import COMPRESSION


def import_names(stmt: ast.Import | ast.ImportFrom) -> list[tuple[str, bool]]:
    """Names the statement binds, each with whether it is a Horovod module or member."""
    if isinstance(stmt, ast.ImportFrom):
        horovod = stmt.level == 0 and (stmt.module or "").split(".")[0] == "horovod"
        return [(a.asname or a.name, horovod) for a in stmt.names if a.name != "*"]
    return [
        (a.asname or a.name.split(".")[0], a.name.split(".")[0] == "horovod") for a in stmt.names
    ]


class Statements:
    """Deletes one file's Horovod statements as patches of the rule ``rule``."""

    def __init__(
        self,
        rule: str,
        ctx: FileContext,
        imports: Sequence[ast.Import | ast.ImportFrom],
        handles: Handles,
    ) -> None:
        self.rule = rule
        self.ctx = ctx
        self.imports = imports
        self.handles = handles

    def _record(self, subject: ast.AST, edits: Sequence[Edit | None]) -> bool:
        return record(self.ctx, self.rule, subject, edits)

    def remove(self, stmt: ast.stmt) -> bool:
        """Delete a statement; ``pass`` when nothing else would be left in its block."""
        ctx = self.ctx
        others = [s for s in ctx.block_of(stmt) if s is not stmt]
        left = any(not removed(ctx, *ctx.span(s)) for s in others)
        edit = ctx.remove_statement(stmt) if left else ctx.replace(stmt, "pass")
        if clash(ctx, [edit]) is not None:
            edit = ctx.replace(stmt, "pass")  # e.g. another rule re-indents the line
        return self._record(stmt, [edit])

    def gpu_pinning(self, ref: Ref) -> None:
        """``config.gpu_options.visible_device_list = str(hvd.local_rank())`` goes."""
        ctx = self.ctx
        try:
            stmt = ctx.index.statement_of(ref.node)
        except ValueError:
            return
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return
        target = stmt.targets[0]
        if not (isinstance(target, ast.Attribute) and target.attr == "visible_device_list"):
            return
        if removed(ctx, *ctx.span(stmt)):
            return
        if self.remove(stmt):
            ctx.finding(self.rule, stmt, Severity.INFO,
                        "GPU pinning by Horovod rank removed: each NPU process gets its device "
                        "from ASCEND_DEVICE_ID and the rank table")  # fmt: skip

    def dead_compression(self, refs: Sequence[Ref]) -> None:
        """``c = hvd.Compression.fp16 if f else hvd.Compression.none`` goes when ``c`` is unused.

        The ``compression=c`` arguments it fed were removed with the Horovod optimizer options.
        """
        ctx = self.ctx
        done: set[int] = set()
        for ref in refs:
            if not ref.name.startswith(COMPRESSION) or removed(ctx, *ctx.span(ref.node)):
                continue
            try:
                stmt = ctx.index.statement_of(ref.node)
            except ValueError:
                continue
            if id(stmt) in done or not self._compression_only(stmt):
                continue
            done.add(id(stmt))
            assert isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
            name = stmt.targets[0].id
            used = any(
                isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
                and not removed(ctx, *ctx.span(n))
                for n in ast.walk(ctx.tree)
            )  # fmt: skip
            if not used and self.remove(stmt):
                ctx.finding(self.rule, stmt, Severity.INFO,
                            f"`{name}` (a Horovod gradient compression) removed with the "
                            "compression= arguments it fed: HCCL does not compress")  # fmt: skip

    def _compression_only(self, stmt: ast.stmt) -> bool:
        """An ``x = ...`` whose value is Horovod compressions, names, constants and ``if``s."""
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return False
        if not isinstance(stmt.targets[0], ast.Name):
            return False
        allowed = (ast.IfExp, ast.BoolOp, ast.UnaryOp, ast.Compare, ast.Constant, ast.Name,
                   ast.Attribute, ast.Load, ast.boolop, ast.unaryop, ast.cmpop)  # fmt: skip
        if not all(isinstance(n, allowed) for n in ast.walk(stmt.value)):
            return False
        scope = self.ctx.index.scope_at(stmt)
        resolver = self.ctx.index.resolver
        found = False
        for node in ast.walk(stmt.value):
            name = resolver.qualified(node, scope) if isinstance(node, ast.Attribute) else None
            if name is not None and name.split(".")[0] == "hvd":
                if not f"{name}.".startswith(COMPRESSION):
                    return False
                found = True
        return found

    def remove_imports(self) -> None:
        """Remove the Horovod imports; an optional-Horovod ``try`` goes with its fallback."""
        index = self.ctx.index
        only_horovod = [s for s in self.imports if all(h for _, h in import_names(s))]
        done: set[int] = set()
        for stmt in self.imports:
            if id(stmt) in done:
                continue
            parent = index.parent(stmt)
            group = [s for s in only_horovod if index.parent(s) is parent]
            block = optional_import_try(self.ctx, group) if stmt in group else None
            if block is not None and self._remove_try(block):
                done.update(id(s) for s in block.body)
            else:
                self._remove_import(stmt)

    def _remove_try(self, block: ast.Try) -> bool:
        """Remove ``try: import horovod... / except ImportError: <stand-in>`` as a whole.

        Kept (False) when code after it reads a name its handler binds, other than the Horovod
        names, whose uses are all rewritten by now.
        """
        ctx = self.ctx
        horovod = {n for s in block.body if isinstance(s, (ast.Import, ast.ImportFrom))
                   for n, _ in import_names(s)}  # fmt: skip
        used = used_after(ctx, self.handles.parents, block, handler_names(block) - horovod)
        if used:
            names = ", ".join(f"`{n}`" for n in used)
            ctx.finding(self.rule, block, Severity.INFO,
                        "the `except ImportError` branch of the removed Horovod import is kept: "
                        f"{names}, which it binds, is used later",
                        f"if {names} only stood for 'Horovod is missing', remove the try "
                        "statement and its uses by hand")  # fmt: skip
            return False
        others = [s for s in ctx.block_of(block) if s is not block]
        left = any(not removed(ctx, *ctx.span(s)) for s in others)
        edit = remove_lines(ctx, block) if left else ctx.replace(block, "pass")
        if not self._record(block, [edit]):
            return False
        ctx.finding(self.rule, block, Severity.INFO,
                    "optional-Horovod `try` removed with its `except ImportError` fallback: the "
                    "migrated script does not use Horovod")  # fmt: skip
        return True

    def _remove_import(self, stmt: ast.Import | ast.ImportFrom) -> None:
        if all(horovod for _, horovod in import_names(stmt)):
            self.remove(stmt)
            return
        self.ctx.finding(self.rule, stmt, Severity.WARNING,
                         "this import also imports Horovod, which the migrated file no longer uses",
                         "remove the Horovod part of the import by hand")  # fmt: skip
