"""``run_spec.json``: a run's :class:`~tf2npu.runtime.job.RunSpec` as a file, for a child process.

The layout is the spec's dataclass fields, read from :func:`dataclasses.fields` (no second field
list), under a schema number::

    {"schema": 1, "spec": {"script": "/abs/train.py", "script_args": ["--lr", "0.1"],
     "npu": true, ..., "engine": {"fusion": {"rules_off": ["layer_norm"], ...}, ...}}}

A field is encoded by its type hint: a ``Path`` as a string, a tuple or frozenset as a list (a
frozenset sorted, so one spec has one file), a nested dataclass as an object, ``None`` as
``null``. Decoding checks every key and type against the same hints: an unknown key, a missing
one or a value of the wrong type is an :class:`~tf2npu.errors.ConfigError` naming the key, the
value and the fix. The codec knows no spec class (this layer imports nothing above it): the
caller hands it the class.

When a spec never reaches its script (the file is not a spec, an option value the run rejects),
the child writes why beside the spec file, as ``start_error.json``, so that the tool that
started it reads the failure as data instead of scraping the child's log::

    {"schema": 1, "exit_code": 2,
     "error": {"kind": "usage", "type": "ConfigError", "message": "...", "where": null}}

``error`` is shaped as the run summary's ``error`` section (docs/run.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from tf2npu.atomic import write_text_atomic
from tf2npu.errors import ConfigError

__all__ = [
    "SCHEMA",
    "SPEC_FILE",
    "START_ERROR_FILE",
    "decode",
    "encode",
    "read",
    "read_start_error",
    "write",
    "write_start_error",
]

SPEC_FILE = "run_spec.json"
START_ERROR_FILE = "start_error.json"
"""Beside a spec file: why the run never reached its script (see the module docstring)."""
SCHEMA = 1

T = TypeVar("T")

_FIX = "write the file with RunSpec.to_json() (tf2npu writes it for every child run)"


def encode(spec: object) -> dict[str, Any]:
    """``spec`` (a dataclass instance) as the JSON object of the file."""
    return {"schema": SCHEMA, "spec": _encode_fields(spec)}


def decode(cls: type[T], data: object, source: str = SPEC_FILE) -> T:
    """The instance of dataclass ``cls`` that :func:`encode` made ``data`` from."""
    if not isinstance(data, dict) or set(data) != {"schema", "spec"}:
        raise ConfigError(
            f"{source}: expected {{'schema': {SCHEMA}, 'spec': {{...}}}}, got keys "
            f"{sorted(data) if isinstance(data, dict) else type(data).__name__}; {_FIX}"
        )
    if data["schema"] != SCHEMA:
        raise ConfigError(
            f"{source}: schema = {data['schema']!r} is not {SCHEMA}, the only schema this "
            f"tf2npu reads; {_FIX} with this tf2npu"
        )
    return typing.cast(T, _decode_value(cls, data["spec"], f"{source}: spec"))


def write(path: Path, spec: object) -> None:
    """Write ``spec`` to ``path`` (atomically: a child never reads half a file)."""
    write_text_atomic(path, json.dumps(encode(spec), indent=2) + "\n")


def read(cls: type[T], path: Path) -> T:
    """Read the spec file at ``path`` into an instance of ``cls``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"run spec {str(path)!r}: cannot read it: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"run spec {str(path)!r} is not JSON ({exc}); {_FIX}") from None
    return decode(cls, data, f"run spec {str(path)!r}")


def write_start_error(folder: Path, error: BaseException, exit_code: int) -> None:
    """Write ``start_error.json`` into ``folder`` (the spec file's): ``error`` stopped the run
    before its script started, and the child exits ``exit_code``. A folder that cannot be
    written to is left alone (the child's stderr still says it)."""
    data = {
        "schema": SCHEMA,
        "exit_code": exit_code,
        "error": {
            "kind": "usage",
            "type": type(error).__name__,
            "message": " ".join([str(error), *(f"({n})" for n in getattr(error, "__notes__", ()))]),
            "where": None,
        },
    }
    with contextlib.suppress(OSError):
        write_text_atomic(folder / START_ERROR_FILE, json.dumps(data, indent=2) + "\n")


def read_start_error(folder: Path) -> str | None:
    """The one-line reason in ``folder``'s ``start_error.json``; None when there is none (or
    it is not one: a half-written file cannot exist, so that is someone else's file)."""
    from tf2npu.artifacts.run_summary import describe_error

    try:
        data = json.loads((folder / START_ERROR_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("error"), dict):
        return None
    return describe_error(data["error"])


def _encode_fields(obj: object) -> dict[str, Any]:
    hints = typing.get_type_hints(type(obj))
    return {
        f.name: _encode_value(hints[f.name], getattr(obj, f.name))
        for f in dataclasses.fields(typing.cast(Any, obj))
    }


def _encode_value(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    if dataclasses.is_dataclass(value):
        return _encode_fields(value)
    if isinstance(value, Path):
        return str(value)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        (hint,) = [a for a in args if a is not type(None)]
        return _encode_value(hint, value)
    if origin is tuple and isinstance(value, tuple):
        items = args if args[-1:] != (Ellipsis,) else (args[0],) * len(value)
        return [_encode_value(h, v) for h, v in zip(items, value, strict=True)]
    if origin is frozenset:
        return sorted(_encode_value(args[0], v) for v in value)
    return value


def _decode_fields(cls: type, data: object, where: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if not isinstance(data, dict):
        raise _wrong(where, data, f"an object with the keys {sorted(fields)}")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r} (= {data[unknown[0]]!r}); the keys are "
            f"{sorted(fields)}; {_FIX}"
        )
    missing = [name for name in fields if name not in data]
    if missing:
        raise ConfigError(f"{where}: key {missing[0]!r} is missing; {_FIX}")
    hints = typing.get_type_hints(cls)
    values = {name: _decode_value(hints[name], data[name], f"{where}.{name}") for name in fields}
    return cls(**values)


def _decode_value(hint: Any, value: Any, where: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _decode_value(inner, value, where)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_fields(hint, value, where)
    if origin in (tuple, frozenset):
        if not isinstance(value, list):
            raise _wrong(where, value, "a list")
        if origin is frozenset:
            return frozenset(
                _decode_value(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)
            )
        if args[-1:] == (Ellipsis,):
            args = (args[0],) * len(value)
        elif len(value) != len(args):
            raise _wrong(where, value, f"a list of {len(args)} items")
        return tuple(
            _decode_value(h, v, f"{where}[{i}]")
            for i, (h, v) in enumerate(zip(args, value, strict=True))
        )
    return _decode_scalar(hint, value, where)


def _decode_scalar(hint: Any, value: Any, where: str) -> Any:
    if hint is Path:
        if not isinstance(value, str):
            raise _wrong(where, value, "a path as a string")
        return Path(value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, bool):
        raise _wrong(where, value, "an integer")
    if hint in (str, bool, int, float) and isinstance(value, hint):
        return value
    raise _wrong(where, value, f"a {getattr(hint, '__name__', hint)}")


def _wrong(where: str, value: object, expected: str) -> ConfigError:
    return ConfigError(f"{where} = {value!r} is not {expected}; {_FIX}")
