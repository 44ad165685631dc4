"""Measure ``tf2npu migrate`` on a corpus of real TF1 scripts against a hand-made ground truth.

Usage::

    python benchmarks/migrate_corpus.py CORPUS_DIR [--jobs N] [--json OUT] [--runs 3]
                                        [--expected JSON] [--strict]

CORPUS_DIR holds the corpus ``.py`` files (assembled as described in ``benchmarks/README.md``;
third-party code, never committed). The ground truth is ``--expected``, by default
``CORPUS_DIR/expected.json``, else ``benchmarks/corpus_expected.json`` (the same items without
quoted source lines). Everything is done through the library API (``make_plan`` /
``migrate_tree`` / ``migrate_source``) with default options (``MigrateOptions()``:
``--distributed auto``, no entry script); outputs go to a temporary folder that is deleted
afterwards. The script needs nothing beyond the project.

What is measured
----------------
crashes
    Any exception escaping ``migrate_tree`` (or, to locate it, ``migrate_source`` on one file)
    is a crash. Files the tool itself reports as ``failed`` are listed with their reason.
parse
    Every output ``.py`` whose input parses (``ast.parse``) must parse too.
comments
    Comment tokens (``tokenize``) of each input file that are still present in its output,
    compared as a multiset of comment texts (a comment whose text changed counts as lost; a
    comment the tool adds does not make up for a lost one). Reported as % kept overall.
idempotency
    The output tree is migrated again (same options): the second run must report zero changes
    and produce byte-identical files.
rewrites (vs ``expected.json``)
    Each expected item ``{"line", "kind", "note", "accept"?}`` is *satisfied* when the first
    run's change list for that file has a change whose ``rule`` is the item's ``kind`` (or one of
    the rule names in the item's optional ``accept`` list) and whose ``line`` lies within the
    *statement span* of the item's line. Lines are 1-based lines of the input file.

    Statement span of line L: among the statements of the input whose *header* contains L, the
    innermost one (largest first line). The header of a simple statement is all its lines; of a
    compound statement (``with``, ``if``, ``for``, ``try``, ...) its first line up to the line
    before its first body statement (the whole ``with`` items / condition); of a ``def`` the
    whole function (decorators to last line), so a rewrite of a function body satisfies an item
    on the ``def`` line (``gelu``). If no statement contains L, the span is L alone.

    Matching is one to one: a change satisfies at most one item. Changes on exactly the item's
    line are assigned first, then any change within the span (nearest line first). For
    ``horovod`` the import item is satisfied by the ``horovod`` rule's change on the import
    statement (its removal); every ``hvd.*`` use is a separate item. Items not satisfied are
    *misses*. Changes not used by any item are *extras*, listed for review (the engine's own
    ``npu_import``/``npu_helper`` changes are not listed); an extra is not necessarily wrong,
    the ground truth is conservative (see each file's ``remarks`` in ``expected.json``).
speed
    Source lines of the corpus ``.py`` files per second, end to end: wall time of
    ``migrate_tree`` (walk, read, migrate, write every file) with one job, measured in-process
    (interpreter start and imports excluded), ``--runs`` times into fresh folders; best and
    median. Also lines/s of ``migrate_source`` alone over the files' bytes held in memory.

Targets (issue 2, "Measured"): no crash; outputs parse; >= 99 % comment lines kept; >= 95 %
expected rewrites satisfied; idempotent; >= 8,000 lines/s per core. ``--strict`` makes the exit
code 1 when a target is missed (it is always 1 after a crash).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import shutil
import statistics
import sys
import tempfile
import time
import tokenize
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tf2npu.migrate.engine import migrate_source
from tf2npu.migrate.model import Change, FileResult, FileStatus, MigrationReport
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.tree import make_plan, migrate_tree

ENGINE_RULES = frozenset({"npu_import", "npu_helper"})
Json = dict[str, Any]
TARGETS = {"comments_kept_pct": 99.0, "rewrites_satisfied_pct": 95.0, "lines_per_second": 8000.0}


# -- helpers ----------------------------------------------------------------------------------
def count_lines(raw: bytes) -> int:
    """Physical lines, as ``wc -l`` plus a last line without newline."""
    if not raw:
        return 0
    return raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)


def parses(raw: bytes) -> bool:
    try:
        ast.parse(raw)
    except (SyntaxError, ValueError):
        return False
    return True


def comments(raw: bytes) -> Counter[str] | None:
    """Multiset of comment texts, or None when the file does not tokenize."""
    found: Counter[str] = Counter()
    try:
        for tok in tokenize.tokenize(io.BytesIO(raw).readline):
            if tok.type == tokenize.COMMENT:
                found[tok.string.rstrip()] += 1
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return None
    return found


def _header_end(stmt: ast.stmt) -> int:
    body = getattr(stmt, "body", None)
    if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
        return stmt.end_lineno or stmt.lineno
    first: ast.stmt = body[0]
    return max(stmt.lineno, first.lineno - 1)


_COMPOUND = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.ClassDef,
    ast.Match,
    ast.TryStar,
)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def statement_spans(tree: ast.Module) -> list[tuple[int, int, int, int]]:
    """(header_first, header_last, span_first, span_last) of every statement."""
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        first = node.lineno
        last = node.end_lineno or node.lineno
        if isinstance(node, _DEFS):
            deco = min((d.lineno for d in node.decorator_list), default=first)
            spans.append((deco, _header_end(node), deco, last))
        elif isinstance(node, _COMPOUND):
            if isinstance(node, ast.With | ast.AsyncWith):
                ends = [i.context_expr.end_lineno or first for i in node.items]
                ends += [
                    i.optional_vars.end_lineno or first
                    for i in node.items
                    if i.optional_vars is not None
                ]
                head = max(ends)
            else:
                head = _header_end(node)
            spans.append((first, head, first, head))
        else:
            spans.append((first, last, first, last))
    return spans


def span_of(line: int, spans: list[tuple[int, int, int, int]]) -> tuple[int, int]:
    best: tuple[int, int, int, int] | None = None
    for span in spans:
        if span[0] <= line <= span[1] and (best is None or span[0] > best[0]):
            best = span
    return (best[2], best[3]) if best else (line, line)


# -- matching ---------------------------------------------------------------------------------
@dataclass
class FileMatch:
    satisfied: list[Json] = field(default_factory=list)
    missed: list[Json] = field(default_factory=list)
    extra: list[Change] = field(default_factory=list)


def match_file(items: list[Json], changes: tuple[Change, ...], raw: bytes | None) -> FileMatch:
    spans = statement_spans(ast.parse(raw)) if raw is not None and parses(raw) else []
    pool = [c for c in changes if c.rule not in ENGINE_RULES]
    used: set[int] = set()
    result = FileMatch()
    ranges = [span_of(it["line"], spans) for it in items]
    assigned: dict[int, int] = {}
    for exact in (True, False):
        for n, item in enumerate(items):
            if n in assigned:
                continue
            rules = {item["kind"], *item.get("accept", ())}
            lo, hi = ranges[n]
            options = [
                (abs(c.line - item["line"]), k)
                for k, c in enumerate(pool)
                if k not in used
                and c.rule in rules
                and (c.line == item["line"] if exact else lo <= c.line <= hi)
            ]
            if options:
                k = min(options)[1]
                used.add(k)
                assigned[n] = k
    for n, item in enumerate(items):
        if n in assigned:
            result.satisfied.append(
                {
                    **item,
                    "change_line": pool[assigned[n]].line,
                    "change_rule": pool[assigned[n]].rule,
                }
            )
        else:
            result.missed.append({**item, "span": list(ranges[n])})
    result.extra = [c for k, c in enumerate(pool) if k not in used]
    return result


# -- runs -------------------------------------------------------------------------------------
def run_tree(src: Path, out: Path, options: MigrateOptions, jobs: int) -> MigrationReport:
    plan = make_plan(src, out, out.parent / (out.name + "_report"), force=True)
    return migrate_tree(plan, options, jobs=jobs)


def find_crash(src: Path, options: MigrateOptions) -> list[Json]:
    """After migrate_tree raised: which files make migrate_source raise."""
    crashes = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        try:
            migrate_source(path.read_bytes(), rel, options)
        except Exception:
            crashes.append({"file": rel, "traceback": traceback.format_exc()})
    return crashes


def pct(num: float, den: float) -> float:
    return 100.0 * num / den if den else 100.0


def default_expected(corpus: Path) -> Path:
    """CORPUS_DIR/expected.json, else the copy kept next to this script (no source quotes)."""
    local = corpus / "expected.json"
    return local if local.exists() else Path(__file__).with_name("corpus_expected.json")


def measure(corpus: Path, jobs: int, runs: int, expected_path: Path | None = None) -> Json:
    options = MigrateOptions()
    expected_path = expected_path or default_expected(corpus)
    expected: Json = {}
    if expected_path.exists():
        expected = json.loads(expected_path.read_text(encoding="utf-8"))["files"]
    inputs = {
        p.relative_to(corpus).as_posix(): p.read_bytes() for p in sorted(corpus.rglob("*.py"))
    }
    total_lines = sum(count_lines(b) for b in inputs.values())
    work = Path(tempfile.mkdtemp(prefix="tf2npu_corpus_"))
    res: Json = {
        "corpus": str(corpus),
        "expected": str(expected_path) if expected_path.exists() else None,
        "files": len(inputs),
        "lines": total_lines,
        "options": options.as_dict(),
        "crashes": [],
        "failed_files": [],
    }
    try:
        # 1. the functional run
        out1 = work / "out1"
        try:
            report = run_tree(corpus, out1, options, jobs)
        except Exception:
            res["crashes"] = [{"file": None, "traceback": traceback.format_exc()}]
            res["crashes"] += find_crash(corpus, options)
            return res
        by_path: dict[str, FileResult] = {f.path: f for f in report.files}
        res["failed_files"] = [
            {"file": f.path, "reason": f.reason}
            for f in report.files
            if f.status is FileStatus.FAILED
        ]
        res["status_counts"] = dict(
            Counter(f.status.value for f in report.files if f.path.endswith(".py"))
        )
        res["changes_by_rule"] = dict(sorted(Counter(c.rule for c in report.changes).items()))

        # 2. outputs parse when inputs parse; comments kept
        unparsable, kept, total_comments, lost_by_file = [], 0, 0, {}
        outputs: dict[str, bytes] = {}
        for rel, raw in inputs.items():
            out_raw = (out1 / rel).read_bytes()
            outputs[rel] = out_raw
            if parses(raw) and not parses(out_raw):
                unparsable.append(rel)
            before, after = comments(raw), comments(out_raw)
            if before is None:
                continue
            after = after or Counter()
            file_kept = sum(min(n, after[text]) for text, n in before.items())
            kept += file_kept
            total_comments += sum(before.values())
            if file_kept < sum(before.values()):
                lost = before - after
                lost_by_file[rel] = [t for t, n in lost.items() for _ in range(n)]
        res["parse"] = {
            "inputs_parsing": sum(parses(b) for b in inputs.values()),
            "outputs_not_parsing": unparsable,
        }
        res["comments"] = {
            "input": total_comments,
            "kept": kept,
            "kept_pct": round(pct(kept, total_comments), 3),
            "lost": lost_by_file,
        }

        # 3. idempotency: migrate the output again
        out2 = work / "out2"
        try:
            report2 = run_tree(out1, out2, options, jobs)
        except Exception:
            res["crashes"].append({"file": None, "pass": 2, "traceback": traceback.format_exc()})
            report2 = None
        if report2 is not None:
            second_changes = [c for c in report2.changes]
            differ = sorted(rel for rel in inputs if (out2 / rel).read_bytes() != outputs[rel])
            res["idempotency"] = {
                "second_run_changes": len(second_changes),
                "files_with_changes": sorted({c.path for c in second_changes}),
                "files_not_identical": differ,
                "ok": not second_changes and not differ,
            }

        # 4. rewrites vs the ground truth
        satisfied, missed, extra = [], [], []
        kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for rel in sorted(set(expected) | set(inputs)):
            items = expected.get(rel, {}).get("items", [])
            result = by_path.get(rel)
            changes = result.changes if result is not None else ()
            m = match_file(items, changes, inputs.get(rel))
            for it in m.satisfied:
                satisfied.append({"file": rel, **it})
                kinds[it["kind"]][0] += 1
                kinds[it["kind"]][1] += 1
            for it in m.missed:
                missed.append({"file": rel, **it})
                kinds[it["kind"]][1] += 1
            for c in m.extra:
                extra.append(
                    {
                        "file": rel,
                        "line": c.line,
                        "rule": c.rule,
                        "before": c.before[:160],
                        "after": c.after[:160],
                    }
                )
        n_expected = len(satisfied) + len(missed)
        res["rewrites"] = {
            "ground_truth": expected_path.exists(),
            "expected": n_expected,
            "satisfied": len(satisfied),
            "satisfied_pct": round(pct(len(satisfied), n_expected), 2),
            "by_kind": {k: {"satisfied": v[0], "expected": v[1]} for k, v in sorted(kinds.items())},
            "missed": missed,
            "extra": extra,
        }

        # 5. speed: migrate_tree end to end, one job; migrate_source in memory
        tree_times = []
        for n in range(runs):
            out = work / f"speed{n}"
            start = time.perf_counter()
            run_tree(corpus, out, options, 1)
            tree_times.append(time.perf_counter() - start)
            shutil.rmtree(out, ignore_errors=True)
        source_times = []
        for _ in range(runs):
            start = time.perf_counter()
            for rel, raw in inputs.items():
                migrate_source(raw, rel, options)
            source_times.append(time.perf_counter() - start)
        res["speed"] = {
            "runs": runs,
            "migrate_tree_seconds": [round(t, 4) for t in tree_times],
            "migrate_tree_lines_per_s_best": round(total_lines / min(tree_times)),
            "migrate_tree_lines_per_s_median": round(total_lines / statistics.median(tree_times)),
            "migrate_source_seconds": [round(t, 4) for t in source_times],
            "migrate_source_lines_per_s_best": round(total_lines / min(source_times)),
            "migrate_source_lines_per_s_median": round(
                total_lines / statistics.median(source_times)
            ),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


def verdicts(res: Json) -> dict[str, bool]:
    v = {"no_crash": not res["crashes"]}
    if "parse" in res:
        v["outputs_parse"] = not res["parse"]["outputs_not_parsing"]
        v["comments_kept"] = res["comments"]["kept_pct"] >= TARGETS["comments_kept_pct"]
    if "idempotency" in res:
        v["idempotent"] = res["idempotency"]["ok"]
    if "rewrites" in res and res["rewrites"]["ground_truth"]:
        v["rewrites_satisfied"] = (
            res["rewrites"]["satisfied_pct"] >= TARGETS["rewrites_satisfied_pct"]
        )
    if "speed" in res:
        v["speed"] = res["speed"]["migrate_tree_lines_per_s_best"] >= TARGETS["lines_per_second"]
    return v


# -- output -----------------------------------------------------------------------------------
def print_table(res: Json) -> None:
    w = sys.stdout.write
    ok = verdicts(res)
    mark = {True: "ok  ", False: "FAIL"}
    w(f"corpus {res['corpus']}: {res['files']} .py files, {res['lines']:,} lines\n\n")
    w(f"{'measure':<34}{'value':>24}  target\n{'-' * 72}\n")
    w(f"{mark[ok['no_crash']]} {'crashes':<29}{len(res['crashes']):>24}  0\n")
    if "status_counts" in res:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(res["status_counts"].items()))
        w(f"     {'file status':<29}{counts:>24}\n")
        w(f"     {'files failed':<29}{len(res['failed_files']):>24}\n")
    if "parse" in res:
        bad = len(res["parse"]["outputs_not_parsing"])
        w(f"{mark[ok['outputs_parse']]} {'outputs not parsing':<29}{bad:>24}  0\n")
        c = res["comments"]
        val = f"{c['kept_pct']:.2f}% ({c['kept']}/{c['input']})"
        w(f"{mark[ok['comments_kept']]} {'comments kept':<29}{val:>24}  >= 99%\n")
    if "idempotency" in res:
        i = res["idempotency"]
        val = f"{i['second_run_changes']} chg, {len(i['files_not_identical'])} files differ"
        w(f"{mark[ok['idempotent']]} {'idempotent (2nd run)':<29}{val:>24}  0, 0\n")
    if "rewrites" in res:
        r = res["rewrites"]
        if r["ground_truth"]:
            val = f"{r['satisfied_pct']:.1f}% ({r['satisfied']}/{r['expected']})"
            w(f"{mark[ok['rewrites_satisfied']]} {'rewrites satisfied':<29}{val:>24}  >= 95%\n")
        else:
            w(f"     {'rewrites satisfied':<29}{'n/a: no expected.json':>24}\n")
        for kind, v in r["by_kind"].items():
            w(f"       {kind:<27}{v['satisfied']:>15}/{v['expected']:<8}\n")
        w(f"     {'extra changes (review)':<29}{len(r['extra']):>24}\n")
    if "speed" in res:
        s = res["speed"]
        val = f"{s['migrate_tree_lines_per_s_best']:,} / {s['migrate_tree_lines_per_s_median']:,}"
        w(f"{mark[ok['speed']]} {'lines/s tree best/median':<29}{val:>24}  >= 8,000\n")
        val = (
            f"{s['migrate_source_lines_per_s_best']:,} / {s['migrate_source_lines_per_s_median']:,}"
        )
        w(f"     {'lines/s source best/median':<29}{val:>24}\n")
        secs = ", ".join(map(str, s["migrate_tree_seconds"]))
        w(f"     {'migrate_tree seconds':<29}{secs:>24}\n")
    for crash in res["crashes"]:
        w(f"\nCRASH {crash.get('file')}:\n{crash['traceback']}")
    for f in res["failed_files"]:
        w(f"\nFAILED {f['file']}: {f['reason']}")
    if res.get("parse", {}).get("outputs_not_parsing"):
        w("\noutputs not parsing: " + ", ".join(res["parse"]["outputs_not_parsing"]) + "\n")
    if res.get("comments", {}).get("lost"):
        w("\ncomments lost:\n")
        for rel, lost in res["comments"]["lost"].items():
            w(f"  {rel}: {len(lost)}: " + " | ".join(x[:60] for x in lost[:5]) + "\n")
    if "idempotency" in res and not res["idempotency"]["ok"]:
        w(
            "\nnot idempotent: "
            + ", ".join(
                sorted(
                    set(res["idempotency"]["files_with_changes"])
                    | set(res["idempotency"]["files_not_identical"])
                )
            )
            + "\n"
        )
    if "rewrites" in res:
        missed = res["rewrites"]["missed"]
        if missed:
            w("\nmisses by kind (file:line):\n")
            groups: dict[str, list[Json]] = defaultdict(list)
            for m in missed:
                groups[m["kind"]].append(m)
            for kind in sorted(groups):
                w(f"  {kind} ({len(groups[kind])})\n")
                for m in groups[kind]:
                    w(f"    {m['file']}:{m['line']}  {m['note'][:90]}\n")
        extra = res["rewrites"]["extra"]
        if extra:
            w("\nextra changes by rule (not in the ground truth; review):\n")
            rules: dict[str, list[Json]] = defaultdict(list)
            for e in extra:
                rules[e["rule"]].append(e)
            for rule in sorted(rules):
                w(f"  {rule} ({len(rules[rule])})\n")
                for e in rules[rule]:
                    before = " ".join(e["before"].split())[:70]
                    w(f"    {e['file']}:{e['line']}  {before}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path, metavar="CORPUS_DIR")
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=1,
        help="workers for the functional runs (speed is always one job)",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    parser.add_argument(
        "--expected",
        type=Path,
        metavar="JSON",
        help="ground truth (default: CORPUS_DIR/expected.json, else "
        "benchmarks/corpus_expected.json)",
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs (default 3)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    corpus = args.corpus.resolve()
    if not corpus.is_dir():
        parser.error(f"{corpus} is not a folder")
    res = measure(corpus, max(1, args.jobs), max(1, args.runs), args.expected)
    res["verdicts"] = verdicts(res)
    print_table(res)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    if res["crashes"]:
        return 1
    return 1 if args.strict and not all(res["verdicts"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
