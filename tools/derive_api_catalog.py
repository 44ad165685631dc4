"""Derive tf2npu's API catalog from the vendor's TF 1.15 API support lists.

Inputs (in ``--data-dir``, see ``docs/reference/ascend-adapter.md`` sections 4.7 and 5):

* ``tf115_api_support_list.csv`` -- the anchor edition (``模块名, API名, 支持度, 迁移建议``);
* ``tf115_api_support_list_latest.csv`` -- the latest edition (``模块名, API名,
  工具迁移API支持度, 说明``), which also lists the Horovod (``hvd.*``) APIs;
* ``tf115_api_support_list_latest_sheet2_enums.csv`` -- enum / attribute names the vendor's
  scanner recognises and reports under their class.

Output (``--out``): ``src/tf2npu/migrate/data/api_catalog.tsv``, UTF-8, LF, one header line, then
one row per name sorted by name, with the columns

* ``api`` -- the canonical dotted name (``tf.nn.dropout``, ``hvd.rank``);
* ``module`` -- the vendor's module grouping (``tf.nn``, ``tf``, ``hvd``, ...);
* ``status`` -- an :class:`tf2npu.migrate.model.ApiStatus` value;
* ``replacement`` -- for rows the tool rewrites, the name it rewrites them to when the vendor
  states one (``npu_ops.dropout``, ``get_npu_rank_id``), else empty;
* ``parent`` -- empty for APIs; for an enum / attribute name (sheet 2) the class or module it
  belongs to. Such a row carries its parent's module and status, so a lookup needs no second
  step; the parent is kept so that reports can say what the attribute was classified as.

Only facts are taken from the lists: names, modules, statuses and rewrite targets. The vendor's
advice prose is not copied; tf2npu writes its own advice (``tf2npu.migrate.catalog``).

The output is a pure function of the three input files: run this script again after the lists
change, and ``tests/migrate/test_catalog.py`` checks that the shipped file is up to date.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tf2npu.migrate.model import ApiStatus

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data" / "ascend"
DEFAULT_OUT = REPO_ROOT / "src" / "tf2npu" / "migrate" / "data" / "api_catalog.tsv"

ANCHOR_FILE = "tf115_api_support_list.csv"
LATEST_FILE = "tf115_api_support_list_latest.csv"
ENUMS_FILE = "tf115_api_support_list_latest_sheet2_enums.csv"

HEADER = ("api", "module", "status", "replacement", "parent")

ANCHOR_COLUMNS = ("模块名", "API名", "支持度", "迁移建议")
LATEST_COLUMNS = ("模块名", "API名", "工具迁移API支持度", "说明")
ENUM_NAME_COLUMN = "API名"

ANCHOR_STATUS: dict[str, ApiStatus] = {
    "支持": ApiStatus.SUPPORTED,
    "支持但需工具迁移": ApiStatus.MIGRATED_BY_TOOL,
    "支持但需手工迁移": ApiStatus.MANUAL,
    # Every tf.compat.v1 / tf.compat.v2 alias is marked 不支持 in the anchor; those become COMPAT
    # (see anchor_status below). The few tf.compat utilities (tf.compat.as_bytes, ...) are real
    # functions with their own status and keep it.
    "不支持": ApiStatus.UNSUPPORTED,
    "分析中": ApiStatus.ANALYSING,
    "废弃": ApiStatus.DEPRECATED,
}

LATEST_STATUS: dict[str, ApiStatus] = {
    "支持（无需迁移）": ApiStatus.SUPPORTED,
    "工具迁移后API功能支持": ApiStatus.MIGRATED_BY_TOOL,
    "工具迁移后训练功能打通": ApiStatus.TRAINING_AFTER_MIGRATION,
    "不支持（无迁移方案，建议用户不使用）": ApiStatus.UNSUPPORTED,
    "不支持（不影响迁移，用户无需干预）": ApiStatus.UNSUPPORTED_HARMLESS,
    "兼容类": ApiStatus.COMPAT,
    "废弃类": ApiStatus.DEPRECATED,
    "分析中（特性商用时不应该存在）": ApiStatus.ANALYSING,
}

COMPAT_PREFIXES = ("tf.compat.v1.", "tf.compat.v2.")

# Statuses that mean "the tool changes this call"; only their rows get a replacement.
REWRITTEN = frozenset({ApiStatus.MIGRATED_BY_TOOL, ApiStatus.TRAINING_AFTER_MIGRATION})

# Statuses that say more than plain SUPPORTED (see merge()).
MORE_SPECIFIC_THAN_SUPPORTED = frozenset({ApiStatus.MIGRATED_BY_TOOL, ApiStatus.MANUAL})

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = rf"{_IDENT}(?:\.{_IDENT})*"
DOTTED_RE = re.compile(rf"^{_DOTTED}$")
# `"tf.nn.dropout" --> "npu_ops.dropout"，...` and `hvd.rank --> "get_npu_rank_id"`: the source
# must be the row's own API and the target a plain dotted name (so `tf.device(xxx) -->
# tf.device(/cpu:0)`, `hvd.init --> 删除` and the Dataset method notes give no replacement).
ARROW_RE = re.compile(rf'^\s*"?(?P<src>{_DOTTED})"?\s*-->\s*"?(?P<dst>{_DOTTED})"?\s*(?:[，,。]|$)')
# `接口替换为npu_ops.dropout` / `接口修改为npu_strategy.NPUStrategy` ("the call becomes X").
BECOMES_RE = re.compile(rf"^\s*接口(?:替换|修改)为\s*(?P<dst>{_DOTTED})\s*$")
# `hvd.elastic.run(func)`: the latest edition writes one name with its argument list.
CALL_SUFFIX_RE = re.compile(rf"^(?P<name>{_DOTTED})\([^()]*\)$")


class CatalogError(ValueError):
    """The input lists do not have the expected shape or vocabulary."""


@dataclass(frozen=True, slots=True)
class Row:
    """One API of one edition, already in our vocabulary."""

    api: str
    module: str
    status: ApiStatus
    replacement: str
    where: str
    """``file:record`` for error messages."""


def read_csv(path: Path, columns: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The data records of ``path`` as ``(where, cells)``, after checking the header."""
    try:
        with path.open(encoding="utf-8", newline="") as f:
            records = list(csv.reader(f))
    except FileNotFoundError as e:
        raise CatalogError(f"{path}: not found") from e
    if not records or tuple(c.strip() for c in records[0][: len(columns)]) != tuple(columns):
        got = records[0] if records else []
        raise CatalogError(f"{path}: expected the columns {list(columns)}, got {got}")
    out: list[tuple[str, list[str]]] = []
    for number, cells in enumerate(records[1:], start=2):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) < len(columns):
            raise CatalogError(f"{path.name}:{number}: expected {len(columns)} cells, got {cells}")
        out.append((f"{path.name}:{number}", cells))
    return out


def normalise_name(raw: str, where: str) -> str:
    name = raw.strip()
    match = CALL_SUFFIX_RE.match(name)
    if match:
        name = match["name"]
    if not DOTTED_RE.match(name) or name.split(".", 1)[0] not in ("tf", "hvd"):
        raise CatalogError(f"{where}: {raw!r} is not a dotted tf.* / hvd.* name")
    return name


def extract_replacement(api: str, advice: str) -> str:
    """The rewrite target the vendor's advice names for ``api``, or ``""``."""
    first = advice.strip().split("\n", 1)[0]
    match = ARROW_RE.match(first)
    if match and match["src"] == api:
        return match["dst"]
    match = BECOMES_RE.match(first)
    if match:
        return match["dst"]
    return ""


def anchor_status(api: str, raw: str, where: str) -> ApiStatus:
    try:
        status = ANCHOR_STATUS[raw.strip()]
    except KeyError:
        raise CatalogError(f"{where}: unknown anchor status {raw!r} for {api}") from None
    if status is ApiStatus.UNSUPPORTED and api.startswith(COMPAT_PREFIXES):
        return ApiStatus.COMPAT
    return status


def latest_status(api: str, raw: str, where: str) -> ApiStatus:
    try:
        return LATEST_STATUS[raw.strip()]
    except KeyError:
        raise CatalogError(f"{where}: unknown latest status {raw!r} for {api}") from None


def load_edition(path: Path, columns: Sequence[str], latest: bool) -> dict[str, Row]:
    rows: dict[str, Row] = {}
    for where, cells in read_csv(path, columns):
        module_raw, api_raw, status_raw, advice = cells[:4]
        api = normalise_name(api_raw, where)
        module = module_raw.strip()
        if not DOTTED_RE.match(module):
            raise CatalogError(f"{where}: bad module {module_raw!r} for {api}")
        status = (latest_status if latest else anchor_status)(api, status_raw, where)
        replacement = extract_replacement(api, advice) if status in REWRITTEN else ""
        row = Row(api, module, status, replacement, where)
        old = rows.get(api)
        if old is not None:
            # The latest edition lists hvd.elastic.TensorFlowKerasState twice, identically.
            same = (old.module, old.status, old.replacement) == (module, status, replacement)
            if not same:
                raise CatalogError(f"{where}: {api} conflicts with {old.where}")
            continue
        rows[api] = row
    return rows


def merge(anchor: dict[str, Row], latest: dict[str, Row]) -> dict[str, Row]:
    """The latest edition wins; anchor-only APIs keep their anchor row.

    Exception: when the anchor says the tool rewrites an API (MIGRATED_BY_TOOL) or that some uses
    need a manual change (MANUAL) and the latest edition just says SUPPORTED, the anchor's status
    is kept, because it is the more specific fact (the plain SUPPORTED loses the caveat). With the
    current lists this keeps MANUAL for tf.case, tf.cond and tf.while_loop (dynamic-shape control
    flow), which the latest edition lists as 支持（无需迁移）.
    """
    merged = dict(anchor)
    for api, row in latest.items():
        old = anchor.get(api)
        if (
            old is not None
            and old.status in MORE_SPECIFIC_THAN_SUPPORTED
            and row.status is ApiStatus.SUPPORTED
        ):
            continue
        merged[api] = row
    return merged


def enum_rows(path: Path, apis: dict[str, Row]) -> dict[str, tuple[str, str, ApiStatus]]:
    """Sheet 2: ``name -> (parent, module, status)``.

    The parent is the name minus its last component. It is listed for all but the module-level
    constants of tf.compat.v1 / tf.compat.v2 (``tf.compat.v1.float32``, ``tf.compat.v2.newaxis``),
    whose parent is the compat module itself: those are compat aliases like every tf.compat name.
    """
    out: dict[str, tuple[str, str, ApiStatus]] = {}
    for where, cells in read_csv(path, (ENUM_NAME_COLUMN,)):
        name = normalise_name(cells[0], where)
        if name in apis:
            raise CatalogError(f"{where}: {name} is listed both as an API and as an attribute")
        parent = name.rsplit(".", 1)[0]
        row = apis.get(parent)
        if row is not None:
            entry = (parent, row.module, row.status)
        elif parent in ("tf.compat.v1", "tf.compat.v2"):
            entry = (parent, parent, ApiStatus.COMPAT)
        else:
            raise CatalogError(f"{where}: the class of {name} ({parent}) is not listed")
        if out.get(name, entry) != entry:
            raise CatalogError(f"{where}: {name} is listed twice")
        out[name] = entry
    return out


def derive(data_dir: Path) -> str:
    """The catalog TSV text for the lists in ``data_dir``."""
    anchor = load_edition(data_dir / ANCHOR_FILE, ANCHOR_COLUMNS, latest=False)
    latest = load_edition(data_dir / LATEST_FILE, LATEST_COLUMNS, latest=True)
    apis = merge(anchor, latest)
    enums = enum_rows(data_dir / ENUMS_FILE, apis)
    lines: list[tuple[str, ...]] = [
        (r.api, r.module, r.status.value, r.replacement, "") for r in apis.values()
    ]
    lines += [(n, module, st.value, "", parent) for n, (parent, module, st) in enums.items()]
    lines.sort()
    return render([HEADER, *lines])


def render(lines: Iterable[Sequence[str]]) -> str:
    out: list[str] = []
    for cells in lines:
        for cell in cells:
            if "\t" in cell or "\n" in cell or "\r" in cell:
                raise CatalogError(f"a cell contains a tab or a line break: {cell!r}")
        out.append("\t".join(cells))
    return "\n".join(out) + "\n"


def summary(text: str) -> str:
    rows = [line.split("\t") for line in text.splitlines()[1:]]
    counts = Counter(r[2] for r in rows)
    attrs = sum(1 for r in rows if r[4])
    parts = [f"{status.value}={counts.get(status.value, 0)}" for status in ApiStatus]
    return f"{len(rows)} rows ({attrs} attributes): " + ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0] if __doc__ else "")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    try:
        text = derive(args.data_dir)
    except CatalogError as e:
        print(f"derive_api_catalog: {e}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"{args.out}: {summary(text)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
