"""Migrating one file: decode, parse, index, run the rules, apply their patches, verify.

The engine never loses input: a file it cannot parse, or whose rewrite would not parse, is passed
through unchanged and reported as failed with the reason.
"""

from __future__ import annotations

import ast
import bisect
import difflib
from dataclasses import dataclass

from tf2npu.migrate import rules as _rules  # noqa: F401  (registers every rule)
from tf2npu.migrate.analysis import api_uses
from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit, Patch, accept, apply_edits, subject_after
from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.model import Change, FileResult, FileStatus, Finding, Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.rule import REGISTRY
from tf2npu.migrate.source import SourceError, SourceFile

RULE_ORDER: tuple[str, ...] = (
    "device_scope",
    "estimator",
    "tpu_estimator",
    "session_config",
    "keras_session",
    "dropout",
    "gelu",
    "dataset_batch",
    "horovod",
    "distribute",
    "loss_scale",
    "entry_point",
    "hazards",
)
"""The order rules run in: earlier rules win when two want to edit the same text."""

IMPORT_RULE = "npu_import"
HELPER_RULE = "npu_helper"


@dataclass(frozen=True, slots=True)
class Migrated:
    """The result for one file and the bytes to write for it."""

    result: FileResult
    output: bytes


def migrate_source(
    raw: bytes, path: str, options: MigrateOptions | None = None, *, diff: bool = False
) -> Migrated:
    """Migrate one file's bytes. ``path`` is only used in reports."""
    options = options or MigrateOptions()
    try:
        source = SourceFile.decode(raw)
        tree = ast.parse(source.text, filename=path, type_comments=False)
    except SourceError as exc:
        return _failed(raw, path, str(exc))
    except SyntaxError as exc:
        return _failed(raw, path, _syntax_reason(exc))
    except (ValueError, RecursionError, MemoryError) as exc:
        return _failed(raw, path, f"cannot parse: {exc}")
    try:
        return _migrate(raw, path, source, tree, options, diff)
    except RecursionError:
        return _failed(raw, path, "expression nesting too deep to analyse")


def _migrate(
    raw: bytes, path: str, source: SourceFile, tree: ast.Module, options: MigrateOptions, diff: bool
) -> Migrated:
    index = ModuleIndex.build(tree)
    ctx = FileContext(path, source, tree, index, options, is_entry=options.entry == path)
    for name in RULE_ORDER:
        if name in REGISTRY:
            REGISTRY[name]().apply(ctx)
    kept, dropped = accept(ctx.patches)
    findings = list(ctx.findings)
    for patch, winner in dropped:
        findings.append(
            Finding(path, patch.line, patch.col, patch.rule, Severity.WARNING,
                    f"not rewritten: overlaps the {winner.rule} rewrite at line {winner.line}",
                    "apply this change by hand after checking the other one")
        )  # fmt: skip
    if kept or ctx.imports:
        for statement in _missing_imports(tree, source, ctx.imports):
            kept.append(_import_patch(tree, source, statement))
        kept.extend(_helper_patches(tree, source, ctx.helpers))
    uses = api_uses(index, path)
    findings.sort(key=lambda f: (f.line, f.col, f.rule))
    if not kept:
        return Migrated(
            FileResult(path, FileStatus.UNCHANGED, source.line_count, (), tuple(findings), uses),
            raw,
        )
    text = apply_edits(source.text, [e for p in kept for e in p.edits])
    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        reason = (
            f"internal error: the rewrite would not parse ({exc.msg}, line {exc.lineno}); "
            "the file was copied unchanged — please report this file"
        )
        return _failed(raw, path, reason, findings=tuple(findings), uses=uses)
    kept.sort(key=lambda p: (p.subject[0], p.rule))
    changes = tuple(
        Change(path, p.line, p.col, p.rule, source.text[p.subject[0] : p.subject[1]],
               subject_after(source.text, p))
        for p in kept
    )  # fmt: skip
    patch_text = _unified_diff(source.text, text, path) if diff else ""
    result = FileResult(
        path, FileStatus.MIGRATED, source.line_count, changes, tuple(findings), uses, "", patch_text
    )
    return Migrated(result, source.encode(text))


def _failed(
    raw: bytes,
    path: str,
    reason: str,
    findings: tuple[Finding, ...] = (),
    uses: tuple[object, ...] = (),
) -> Migrated:
    lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") or not raw else 1)
    result = FileResult(path, FileStatus.FAILED, lines, (), findings, uses, reason)  # type: ignore[arg-type]
    return Migrated(result, raw)


def _syntax_reason(exc: SyntaxError) -> str:
    where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
    hint = ""
    text = exc.text or ""
    if "print " in text or "Missing parentheses" in (exc.msg or "") or "except " in text:
        hint = " (this looks like Python 2 code: port it to Python 3 first, e.g. with 2to3)"
    return f"syntax error at {where}: {exc.msg}{hint}"


def _missing_imports(tree: ast.Module, source: SourceFile, wanted: list[str]) -> list[str]:
    if not wanted:
        return []
    present = {
        " ".join(source.segment(stmt).split())
        for stmt in tree.body
        if isinstance(stmt, (ast.Import, ast.ImportFrom))
    }
    return [s for s in wanted if s not in present]


def _import_position(tree: ast.Module, source: SourceFile) -> tuple[int, bool]:
    """Where module-level imports go: after the docstring and ``__future__`` imports.

    Returns the offset and whether the text must start with a newline.
    """
    body = tree.body
    i = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            i = 1
    while i < len(body) and isinstance(body[i], ast.ImportFrom):
        stmt = body[i]
        assert isinstance(stmt, ast.ImportFrom)
        if stmt.module != "__future__":
            break
        i += 1
    if i < len(body) and body[i].col_offset == 0 and (i == 0 or body[i - 1].end_lineno != body[i].lineno):
        return source.line_start(body[i].lineno), False
    if i == 0:
        return 0, False
    last = body[i - 1]
    assert last.end_lineno is not None
    end = source.line_end(last.end_lineno)
    return end, not source.text[:end].endswith(("\n", "\r"))


def _import_patch(tree: ast.Module, source: SourceFile, statement: str) -> Patch:
    pos, lead = _import_position(tree, source)
    nl = source.newline
    text = (nl if lead else "") + statement + nl
    line = bisect.bisect_right(source.line_starts, pos)
    return Patch(IMPORT_RULE, (Edit(pos, pos, text),), (pos, pos), line, 1)


def _helper_patches(tree: ast.Module, source: SourceFile, helpers: dict[str, list[str]]) -> list[Patch]:
    """Helper definitions, after the module's leading imports (skipping ones already defined)."""
    defined = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    wanted = [lines for name, lines in helpers.items() if name not in defined]
    if not wanted:
        return []
    last_import = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or _is_import_block(stmt):
            last_import = stmt
        elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            break
    nl = source.newline
    if last_import is None:
        pos, lead = _import_position(tree, source)
        prefix, suffix = (nl if lead else ""), nl + nl
    else:
        assert last_import.end_lineno is not None
        pos = source.line_end(last_import.end_lineno)
        prefix = (nl if not source.text[:pos].endswith(("\n", "\r")) else "") + nl + nl
        suffix = nl
    line = bisect.bisect_right(source.line_starts, pos)
    patches = []
    for lines in wanted:
        text = prefix + nl.join(lines) + nl + suffix
        patches.append(Patch(HELPER_RULE, (Edit(pos, pos, text),), (pos, pos), line, 1))
    return patches


def _is_import_block(stmt: ast.stmt) -> bool:
    """``try: import x except ImportError: ...`` and ``if ...: import x`` count as imports."""
    if not isinstance(stmt, (ast.Try, ast.If)):
        return False
    inner = [*stmt.body, *getattr(stmt, "orelse", [])]
    return bool(inner) and all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in inner)


def _unified_diff(before: str, after: str, path: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )
