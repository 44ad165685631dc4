"""Migrating one file: decode, parse, index, run the rules, apply their patches, verify.

The engine never loses input: a file it cannot parse, or whose rewrite would not parse, is passed
through unchanged and reported as failed with the reason.
"""

from __future__ import annotations

import ast
import bisect
import difflib
from dataclasses import dataclass

from tf2npu.gcpause import gc_paused
from tf2npu.migrate import rules as _rules  # noqa: F401  (registers every rule)
from tf2npu.migrate.analysis import api_uses
from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit, Patch, accept, apply_edits, subject_after
from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.model import Change, FileResult, FileStatus, Finding, Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.project import Parsed, parse, take_parsed
from tf2npu.migrate.rule import REGISTRY
from tf2npu.migrate.source import SourceError, SourceFile
from tf2npu.migrate.syntax_check import check_rewrite

RULE_ORDER: tuple[str, ...] = (
    "device_scope",
    "estimator",
    "tpu_estimator",
    "session_config",
    "keras_session",
    "dropout",
    "gelu",
    "dataset_batch",
    "horovod_keras",
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


MAX_SOURCE_BYTES = 4 * 1024 * 1024
"""Python files larger than this are not parsed (copied unchanged, reported failed).

CPython's parser needs 100 to 350 times a file's size in memory (measured on 3.11: 107 times for
ordinary code, 339 times for dense literal lists; at those rates a 50 MB file needs 5 to 17 GB),
so a generated or data-holding ``.py`` file far above any hand-written script could exhaust the
machine. At the limit (about 100,000 lines) a parse peaks at 0.4 to 1.4 GB. See
docs/migration.md, "Reliability"."""


def too_large_reason(size: int) -> str:
    """Why a Python file of ``size`` bytes was not parsed."""
    return (
        f"not parsed: {size:,} bytes is above the {MAX_SOURCE_BYTES:,}-byte limit for Python "
        "sources (parsing needs 100 to 350 times the file size in memory); copied unchanged"
    )


def migrate_source(
    raw: bytes, path: str, options: MigrateOptions | None = None, *, diff: bool = False
) -> Migrated:
    """Migrate one file's bytes. ``path`` is only used in reports."""
    if len(raw) > MAX_SOURCE_BYTES:
        return _failed(raw, path, too_large_reason(len(raw)))
    with gc_paused():
        return _migrate_bytes(raw, path, options or MigrateOptions(), diff)


_TOO_DEEP = "expression nesting too deep for Python's parser; copied unchanged"


def _migrate_bytes(raw: bytes, path: str, options: MigrateOptions, diff: bool) -> Migrated:
    try:
        parsed = take_parsed(raw) or parse(raw, path)
    except SourceError as exc:
        return _failed(raw, path, str(exc))
    except SyntaxError as exc:
        return _failed(raw, path, _syntax_reason(exc))
    except (RecursionError, MemoryError):
        # The parser raises MemoryError with no message for deep nesting (``- - - ... 1``).
        return _failed(raw, path, _TOO_DEEP)
    except ValueError as exc:
        return _failed(raw, path, f"cannot parse: {exc or type(exc).__name__}")
    try:
        return _migrate(raw, path, parsed, options, diff)
    except RecursionError:
        return _failed(raw, path, "expression nesting too deep to analyse")
    except _RuleCrashed as exc:
        return _failed(raw, path, str(exc))


MAX_PASSES = 3
"""A patch dropped for overlapping another is applied by a further pass over the result."""


class _RuleCrashed(Exception):
    """A rule raised: a bug. The file is passed through unchanged; the run goes on."""

    def __init__(self, rule: str, error: Exception) -> None:
        super().__init__(
            f"internal error in rule {rule} ({type(error).__name__}: {error}); "
            "the file was copied unchanged — please report this file"
        )


@dataclass(slots=True)
class _Pass:
    """One run of every rule over one version of the text."""

    source: SourceFile
    tree: ast.Module
    index: ModuleIndex
    kept: list[Patch]
    dropped: list[tuple[Patch, Patch]]
    findings: list[Finding]


def _run_rules(
    path: str,
    source: SourceFile,
    tree: ast.Module,
    options: MigrateOptions,
    index: ModuleIndex | None = None,
) -> _Pass:
    index = index if index is not None else ModuleIndex.build(tree, source.text)
    ctx = FileContext(path, source, tree, index, options, is_entry=options.entry == path)
    for name in RULE_ORDER:
        if name in REGISTRY:
            try:
                REGISTRY[name]().apply(ctx)
            except RecursionError:
                raise
            except Exception as error:  # a bug in one rule must not stop the whole run
                raise _RuleCrashed(name, error) from error
    kept, dropped = accept(ctx.patches)
    if kept or ctx.imports:
        # Imports and helper definitions go first: a rule may insert code at the same offset
        # (right after the imports) that uses them, and insertions at one offset keep order.
        wanted = _missing_imports(tree, source, ctx.imports)
        scheduled = [_import_patch(tree, source, s) for s in wanted]
        scheduled += _helper_patches(tree, source, ctx.helpers)
        kept = scheduled + kept
    return _Pass(source, tree, index, kept, dropped, list(ctx.findings))


def _changes(path: str, run: _Pass) -> list[Change]:
    text = run.source.text
    ordered = sorted(run.kept, key=lambda p: (p.subject[0], p.rule))
    return [
        Change(path, p.line, p.col, p.rule, text[p.subject[0] : p.subject[1]],
               subject_after(text, p))
        for p in ordered
    ]  # fmt: skip


def _migrate(
    raw: bytes, path: str, parsed: Parsed, options: MigrateOptions, diff: bool
) -> Migrated:
    source = parsed.source
    first = _run_rules(path, source, parsed.tree, options, parsed.index)
    findings = first.findings
    edited = [
        (e.start, e.end)
        for p in first.kept
        if p.rule not in (IMPORT_RULE, HELPER_RULE)
        for e in p.edits
    ]
    uses = api_uses(first.index, path, source, edited)
    changes: list[Change] = []
    run, text = first, source.text
    for _ in range(MAX_PASSES):
        if not run.kept:
            break
        edits = [e for p in run.kept for e in p.edits]
        text = apply_edits(run.source.text, edits)
        changes += _changes(path, run)
        try:
            new_tree = ast.parse(text, filename=path) if run.dropped else None
            if new_tree is None:
                check_rewrite(run.source, run.tree, edits, text, path)
        except SyntaxError as exc:
            reason = (
                f"internal error: the rewrite would not parse ({exc.msg}, line {exc.lineno}); "
                "the file was copied unchanged — please report this file"
            )
            return _failed(raw, path, reason, findings=tuple(findings), uses=uses)
        if new_tree is None:
            break
        run = _run_rules(path, SourceFile.decode(source.encode(text)), new_tree, options)
    findings = findings + _overlap_findings(path, run.dropped)
    findings.sort(key=lambda f: (f.line, f.col, f.rule))
    if not changes:
        result = FileResult(
            path, FileStatus.UNCHANGED, source.line_count, (), tuple(findings), uses
        )
        return Migrated(result, raw)
    patch_text = _unified_diff(source.text, text, path) if diff else ""
    result = FileResult(
        path, FileStatus.MIGRATED, source.line_count, tuple(changes), tuple(findings), uses, "",
        patch_text,
    )  # fmt: skip
    return Migrated(result, source.encode(text))


def _overlap_findings(path: str, dropped: list[tuple[Patch, Patch]]) -> list[Finding]:
    """Patches still overlapping after the last pass (both rewrites cannot be combined)."""
    return [
        Finding(path, patch.line, patch.col, patch.rule, Severity.WARNING,
                f"not rewritten: overlaps the {winner.rule} rewrite at line {winner.line}",
                "apply this change by hand after checking the other one")
        for patch, winner in dropped
    ]  # fmt: skip


def _failed(
    raw: bytes,
    path: str,
    reason: str,
    findings: tuple[Finding, ...] = (),
    uses: tuple[object, ...] = (),
) -> Migrated:
    lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") or not raw else 1)
    reason = reason or "unknown failure (please report this file)"  # never an empty reason
    result = FileResult(path, FileStatus.FAILED, lines, (), findings, uses, reason)  # type: ignore[arg-type]
    return Migrated(result, raw)


def _syntax_reason(exc: SyntaxError) -> str:
    if exc.lineno is None:  # e.g. a null byte: the parser gives no position
        return f"syntax error: {exc.msg}"
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
    if (
        i < len(body)
        and body[i].col_offset == 0
        and (i == 0 or body[i - 1].end_lineno != body[i].lineno)
    ):
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


def _helper_patches(
    tree: ast.Module, source: SourceFile, helpers: dict[str, list[str]]
) -> list[Patch]:
    """Helper definitions, after the module's leading imports (skipping ones already defined)."""
    defined = {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
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
    # One patch: definitions two blank lines apart, as PEP 8 has top-level definitions.
    text = prefix + (nl * 3).join(nl.join(lines) for lines in wanted) + nl + suffix
    return [Patch(HELPER_RULE, (Edit(pos, pos, text),), (pos, pos), line, 1)]


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
