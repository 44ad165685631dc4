"""The API catalog: the Ascend support status of every TF 1.15 and Horovod API.

The data (``tf2npu/migrate/data/api_catalog.tsv``) is derived from the vendor's API support lists
by ``tools/derive_api_catalog.py``; it holds names, modules, statuses and rewrite targets only.
The advice texts are tf2npu's own and live here.

:func:`classify` takes a canonical dotted name rooted at ``tf.`` or ``hvd.`` and looks it up in
this order:

1. ``tf.compat.v1.X`` is the same object as ``tf.X`` on TF 1.15, so it is classified as ``tf.X``
   (steps 2-3, then 5); the alias's own row, which only says "compat alias", counts only when
   neither ``tf.X`` nor a parent of it is listed;
2. the exact name, an API or an enum / attribute name (classified as its class);
3. its parents, nearest first (``tf.Session.run`` is classified as ``tf.Session``);
4. any other ``tf.compat.*`` name is a compat alias;
5. names under :data:`HOST_PYTHON_MODULES` (command-line flags, configuration protobufs such as
   ``RewriterConfig``) are host Python: they build no graph op, so the NPU never sees them
   (tf2npu's classification; the vendor does not list them);
6. otherwise the name is not listed.

The returned :class:`ApiInfo` always carries the name as given.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import NamedTuple

from tf2npu.migrate.model import ApiStatus

_PACKAGE = "tf2npu.migrate.data"
_RESOURCE = "api_catalog.tsv"
_HEADER = "api\tmodule\tstatus\treplacement\tparent"
_COMPAT_V1 = "tf.compat.v1."
_FLAGS_ADVICE = (
    "Plain Python on the host (command-line flags): it builds no graph op, so the NPU never "
    "sees it; nothing to do."
)
HOST_PYTHON_MODULES: dict[str, str] = {
    "tf.flags": _FLAGS_ADVICE,
    "tf.app.flags": _FLAGS_ADVICE,
    "tf.core.protobuf": (
        "A configuration protobuf (such as RewriterConfig.OFF for ConfigProto.graph_options."
        "rewrite_options): plain Python on the host that builds no graph op; the NPU session "
        "config keeps it (the vendor's own ConfigProto advice sets remapping = "
        "RewriterConfig.OFF), so nothing to do."
    ),
}
"""Modules whose every name is plain Python run on the host, with their advice: absl flags
re-exported by TF, and the protobuf messages and enums of session configs
(``from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig``, as the vendor's
scripts do)."""


@dataclass(frozen=True)
class ApiInfo:
    """How an API is supported on Ascend, and what to do about it."""

    api: str
    module: str
    status: ApiStatus
    advice: str
    """What the support list says (for a rewritten status: what tf2npu rewrites it to)."""
    note: str = ""
    """The part of ``advice`` before the status's own text (``Compat alias of tf.X ...``)."""
    rewrite: tuple[str, str] = ("", "")
    """The API the rewrite advice names and its replacement (empty when none is listed)."""

    def advice_for(self, changed: bool) -> str:
        """The advice for one use, saying what tf2npu did to it.

        For the statuses the tool rewrites, ``changed`` tells whether a rewrite was recorded
        for this use: the text says it was rewritten only then.
        """
        if self.status not in _DONE:
            return self.advice
        api, replacement = self.rewrite
        if changed:
            done = _DONE_TO if replacement else _DONE
            return self.note + done[self.status].format(api=api, replacement=replacement)
        target = f" to {replacement}" if replacement else ""
        return self.note + _NOT_DONE.format(api=api or self.api, target=target)


class _Row(NamedTuple):
    module: str
    status: ApiStatus
    replacement: str
    parent: str
    """The class (or module) of an enum / attribute row; empty for an API."""


_ADVICE: dict[ApiStatus, str] = {
    ApiStatus.SUPPORTED: "Runs on Ascend as it is.",
    ApiStatus.MIGRATED_BY_TOOL: "tf2npu rewrites this call; check the change list.",
    ApiStatus.TRAINING_AFTER_MIGRATION: (
        "tf2npu rewrites this call so that training runs on Ascend; check the change list."
    ),
    ApiStatus.MANUAL: (
        "Works with static shapes; dynamic shapes need a manual change (see docs/migration.md)."
    ),
    ApiStatus.UNSUPPORTED: (
        "Not supported on Ascend: replace it or keep it out of the device graph."
    ),
    ApiStatus.UNSUPPORTED_HARMLESS: (
        "Has no effect on Ascend but does no harm; no change is needed."
    ),
    ApiStatus.COMPAT: (
        "A tf.compat alias: in a TF 1.15 script use the tf.* API it stands for, whose status "
        "is what counts."
    ),
    ApiStatus.DEPRECATED: "Deprecated in TF 1.15; move to its replacement before migrating.",
    ApiStatus.ANALYSING: "Support not confirmed by the vendor; test it.",
    ApiStatus.NOT_LISTED: (
        "Not in the Ascend support list; check it by running the migrated script (tf2npu run)."
    ),
    ApiStatus.HOST_PYTHON: _FLAGS_ADVICE,
}

_DONE: dict[ApiStatus, str] = {
    ApiStatus.MIGRATED_BY_TOOL: "tf2npu rewrote this use; see the change list.",
    ApiStatus.TRAINING_AFTER_MIGRATION: (
        "tf2npu rewrote this use so that training runs on Ascend; see the change list."
    ),
}
_DONE_TO: dict[ApiStatus, str] = {
    ApiStatus.MIGRATED_BY_TOOL: "tf2npu rewrote {api} to {replacement} here.",
    ApiStatus.TRAINING_AFTER_MIGRATION: (
        "tf2npu rewrote {api} to {replacement} here; training then runs on Ascend."
    ),
}
_NOT_DONE = (
    "Supported on Ascend once migrated{target}, but tf2npu did not change this use (it is "
    "already migrated, or its form is not one the rules rewrite): check it and the findings "
    "at this line."
)
"""What one use says when the tool rewrites the API but recorded no change for it."""

_REWRITE_ADVICE: dict[ApiStatus, str] = {
    ApiStatus.MIGRATED_BY_TOOL: "tf2npu rewrites {api} to {replacement}.",
    ApiStatus.TRAINING_AFTER_MIGRATION: (
        "tf2npu rewrites {api} to {replacement}; training then runs on Ascend."
    ),
}


@functools.cache
def _catalog() -> dict[str, str]:
    """``api -> the rest of its line``, read once from the package data.

    The rest (module, status, replacement, parent; tab-separated) is only split when the row is
    looked up: that keeps loading the 9,000 rows to a few milliseconds.
    """
    text = resources.files(_PACKAGE).joinpath(_RESOURCE).read_text(encoding="utf-8")
    header, _, body = text.partition("\n")
    if header != _HEADER:
        raise ValueError(f"{_RESOURCE}: unexpected header {header!r}")
    return dict(line.split("\t", 1) for line in body.split("\n") if line)


_STATUS_BY_VALUE: dict[str, ApiStatus] = {s.value: s for s in ApiStatus}


def _row(api: str) -> _Row | None:
    rest = _catalog().get(api)
    if rest is None:
        return None
    module, status, replacement, parent = rest.split("\t")
    return _Row(module, _STATUS_BY_VALUE[status], replacement, parent)


def _advice(api: str, row: _Row) -> str:
    if row.replacement and row.status in _REWRITE_ADVICE:
        return _REWRITE_ADVICE[row.status].format(api=api, replacement=row.replacement)
    return _ADVICE[row.status]


def _info(name: str, row: _Row, note: str, api: str) -> ApiInfo:
    """The info for ``name`` classified by ``row`` (the row of ``api``), ``note`` first."""
    rewrite = (api, row.replacement) if row.replacement else (api, "")
    return ApiInfo(name, row.module, row.status, note + _advice(api, row), note, rewrite)


def _lookup(name: str, *, parents: bool = True) -> ApiInfo | None:
    """``name`` itself, else (with ``parents``) its nearest listed parent; ``api`` = ``name``."""
    candidate = name
    while "." in candidate:
        row = _row(candidate)
        if row is not None:
            parent = _row(row.parent) if row.parent else None
            if parent is not None:
                # An enum / attribute row: its status is its class's (the row carries it).
                note = f"Classified as {row.parent}, to which it belongs. "
                info = _info(name, parent, note, row.parent)
                return ApiInfo(name, row.module, row.status, info.advice, note, info.rewrite)
            note = f"Classified as {candidate}, to which it belongs. " if candidate != name else ""
            return _info(name, row, note, candidate)
        if not parents:
            return None
        candidate = candidate.rpartition(".")[0]
    return None


def _unlisted_module(name: str) -> str:
    """The module a name that is not listed belongs to, after the vendor's grouping."""
    parts = name.split(".")
    if parts[0] == "hvd" and len(parts) > 1:
        return "hvd"
    if parts[0] != "tf" or len(parts) < 2 or not all(parts):
        return "Unknown"
    if name.startswith("tf.compat.") and len(parts) > 3:
        return ".".join(parts[:3])
    if len(parts) > 2:
        return ".".join(parts[:2])
    return "tf"


@functools.lru_cache(maxsize=8192)
def classify(name: str) -> ApiInfo:
    """The support status of the API ``name`` (``tf.nn.dropout``, ``hvd.rank``)."""
    if name.startswith(_COMPAT_V1):
        # On TF 1.15 tf.compat.v1.X is tf.X: its status is tf.X's. The alias's own row (always
        # COMPAT) only counts when tf.X is not listed; parents of the alias are not tried, as
        # they are compat module rows that would hide a NOT_LISTED.
        target = "tf." + name[len(_COMPAT_V1) :]
        note = f"Compat alias of {target} (the same object on TF 1.15). "
        info = _lookup(target) or _lookup(name, parents=False) or _host_python(target)
        if info is None:
            info = _not_listed(name)
        return ApiInfo(
            name, info.module, info.status, note + info.advice, note + info.note, info.rewrite
        )
    info = _lookup(name)
    if info is not None:
        return info
    scanned = _scanned_attribute(name)
    if scanned is not None:
        return scanned
    if name.startswith("tf.compat."):
        return ApiInfo(name, _unlisted_module(name), ApiStatus.COMPAT, _ADVICE[ApiStatus.COMPAT])
    return _host_python(name) or _not_listed(name)


def _scanned_attribute(name: str) -> ApiInfo | None:
    """``tf.float32`` and friends: listed only in the vendor's scanning sheet, as tf.compat.v1.X.

    The vendor lists module constants (dtypes, ``AUTO_REUSE``, ``newaxis`` ...) only as attribute
    names of ``tf.compat.v1`` that its scanner should recognise and users need not act on. On
    TF 1.15 ``tf.X`` is that same object, so such a name is supported as it is.
    """
    if not name.startswith("tf.") or name.startswith("tf.compat."):
        return None
    row = _row(_COMPAT_V1 + name[len("tf.") :])
    if row is None or not row.parent:
        return None
    advice = (
        f"Listed by the vendor as an attribute name to recognise ({_COMPAT_V1}{name[3:]}); "
        "nothing to do."
    )
    return ApiInfo(name, "tf", ApiStatus.SUPPORTED, advice)


def _host_python(name: str) -> ApiInfo | None:
    module = next((m for m in HOST_PYTHON_MODULES if name == m or name.startswith(m + ".")), None)
    if module is None:
        return None
    return ApiInfo(name, module, ApiStatus.HOST_PYTHON, HOST_PYTHON_MODULES[module])


def _not_listed(name: str) -> ApiInfo:
    return ApiInfo(
        name, _unlisted_module(name), ApiStatus.NOT_LISTED, _ADVICE[ApiStatus.NOT_LISTED]
    )
