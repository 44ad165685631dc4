"""``report.json``: the whole run as data, with a stable, versioned schema.

The document is one object; ``schema_version`` changes only when a key is removed or changes
meaning (new keys may appear without a version change). Keys:

- ``schema_version`` (int): ``1``.
- ``tool`` (object): ``name`` (``"tf2npu"``) and ``version`` (``tf2npu.__version__``).
- ``source`` (str): the migrated input, as given to ``tf2npu migrate``.
- ``output`` (str): where the migrated tree was written.
- ``options`` (object): the run's options by name (sorted); values are JSON scalars, lists or
  objects (enums as their value, paths as POSIX strings).
- ``seconds`` (number): wall time of the run, rounded to milliseconds.
- ``totals`` (object):
  ``files`` (all input files), ``migrated``, ``unchanged``, ``copied``, ``failed`` (files per
  status), ``changes`` (all changes), ``findings`` (object: ``error``, ``warning``, ``info``
  counts), ``api_uses`` (all API uses).
- ``changes_by_rule`` (object): rule name → number of changes, keys sorted; rules without a
  change are absent.
- ``api_status_counts`` (object): ``raw`` (status → uses) and ``distinct`` (status → distinct API
  names with that status); every status is present (zero included), keys sorted. Statuses are
  the stable values of ``ApiStatus``: ``analysing``, ``compat``, ``deprecated``, ``manual``,
  ``migrated_by_tool``, ``not_listed``, ``supported``, ``training_after_migration``,
  ``unsupported``, ``unsupported_harmless``, ``host_python``.
- ``files`` (array): one object per input file, in input order:

  - ``path`` (str): relative to the migrated root, ``/`` separators.
  - ``status`` (str): ``migrated``, ``unchanged``, ``copied`` or ``failed``.
  - ``lines`` (int): number of source lines (0 for files that were not read as source).
  - ``reason`` (str): why a failed file failed; ``""`` otherwise.
  - ``changes`` (array): ``{line, col, rule, before, after}`` per change, in file-result order.
  - ``findings`` (array): ``{line, col, rule, severity, message, fix}`` per finding, where
    ``severity`` is ``error``, ``warning`` or ``info`` and ``fix`` may be ``""``.
  - ``api_uses`` (array): ``{line, col, module, api, status, advice, kind}`` per API use, where
    ``status`` is an ``ApiStatus`` value and ``kind`` is ``call``, ``attribute``,
    ``decorator`` or ``base``.

Lines and columns count from 1. Records inside a file carry no path: it is the file's. The text
is UTF-8 (``ensure_ascii=False``), indented by 2 down to the records: each change, finding and
API use is one line (thousands of them: the C encoder writes them, the pure-Python one that
``indent`` needs would take most of the report's time), and ends with a newline; the same report
always gives the same text. A file name that is not valid UTF-8 keeps its bytes as surrogate escapes
(``"\\udcff"`` for the byte 0xff): ``os.fsencode(path)`` gives the name back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import tf2npu
from tf2npu.migrate.model import (
    ApiStatus,
    ApiUse,
    Change,
    FileResult,
    FileStatus,
    Finding,
    MigrationReport,
)
from tf2npu.migrate.report.counts import count
from tf2npu.migrate.report.plain import json_escaped, to_plain

REPORT_JSON = "report.json"
SCHEMA_VERSION = 1


_RECORD_DEPTH = 4
"""Root -> ``files`` -> a file -> its ``changes``/``findings``/``api_uses`` -> a record."""
_compact = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode


def render_json(report: MigrationReport) -> str:
    """The JSON document for ``report`` (see the module docstring for the schema)."""
    return json_escaped(_indented(report_data(report), 0)) + "\n"


def _indented(value: Any, depth: int) -> str:
    """``value`` indented by 2 per level above :data:`_RECORD_DEPTH`, compact from there on."""
    if depth >= _RECORD_DEPTH or not isinstance(value, (dict, list)) or not value:
        return _compact(value)
    inner = "\n" + "  " * (depth + 1)
    if isinstance(value, dict):
        items = [f"{_compact(str(k))}: {_indented(v, depth + 1)}" for k, v in value.items()]
        return "{" + inner + ("," + inner).join(items) + "\n" + "  " * depth + "}"
    items = [_indented(v, depth + 1) for v in value]
    return "[" + inner + ("," + inner).join(items) + "\n" + "  " * depth + "]"


def report_data(report: MigrationReport) -> dict[str, Any]:
    """The document as plain data, before encoding."""
    counts = count(report)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "tf2npu", "version": tf2npu.__version__},
        "source": report.source,
        "output": report.output,
        "options": to_plain(report.options),
        "seconds": round(report.seconds, 3),
        "totals": {
            "files": counts.total_files,
            **{status.value: counts.files[status] for status in FileStatus},
            "changes": counts.changes,
            "findings": {severity.value: n for severity, n in counts.findings.items()},
            "api_uses": counts.api_uses,
        },
        "changes_by_rule": dict(sorted(counts.changes_by_rule.items())),
        "api_status_counts": {
            "raw": _by_value(counts.status_raw),
            "distinct": _by_value(counts.status_distinct),
        },
        "files": [_file(result) for result in report.files],
    }


def _by_value(counts: Mapping[ApiStatus, int]) -> dict[str, int]:
    return dict(sorted((status.value, n) for status, n in counts.items()))


def _file(result: FileResult) -> dict[str, Any]:
    return {
        "path": result.path,
        "status": result.status.value,
        "lines": result.lines,
        "reason": result.reason,
        "changes": [_change(c) for c in result.changes],
        "findings": [_finding(f) for f in result.findings],
        "api_uses": [_api_use(u) for u in result.api_uses],
    }


def _change(c: Change) -> dict[str, Any]:
    return {"line": c.line, "col": c.col, "rule": c.rule, "before": c.before, "after": c.after}


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "line": f.line,
        "col": f.col,
        "rule": f.rule,
        "severity": f.severity.value,
        "message": f.message,
        "fix": f.fix,
    }


def _api_use(u: ApiUse) -> dict[str, Any]:
    return {
        "line": u.line,
        "col": u.col,
        "module": u.module,
        "api": u.api,
        "status": u.status.value,
        "advice": u.advice,
        "kind": u.kind,
    }
