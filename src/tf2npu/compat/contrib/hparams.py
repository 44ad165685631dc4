"""``tf.contrib.training.HParams``: TF 1.15's hyperparameter container, which TF 2.15 lacks.

Written for tf2npu from TF 1.15's documented behaviour: a hyperparameter's type is fixed by
its first value (a list fixes the element type), ``parse("a=1,b=[2,3]")`` and
``override_from_dict`` convert values to that type and refuse lossy or surprising
conversions (float→int, number↔bool, non-string→string), and the error messages keep TF
1.15's wording so scripts that match on them still work. Protobuf round-trips
(``to_proto``/``from_proto``, ``hparam_def=``) are not provided: TF 2.15 ships no
``hparam.proto``.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any

from tf2npu.errors import Tf2NpuError

_PARAM_RE = re.compile(
    r"""
    (?P<name>[a-zA-Z][\w\.]*)       # name: "lr" or "model.depth"
    (\[\s*(?P<index>\d+)\s*\])?     # optional index: "[1]"
    \s*=\s*
    ((?P<val>[^,\[]*)               # a single value: "0.1"
     |
     \[(?P<vals>[^\]]*)\])          # a list of values: "[1, 2, 3]"
    ($|,\s*)""",
    re.VERBOSE,
)


def _parse_fail(name: str, var_type: type, value: Any, values: str) -> None:
    raise ValueError(
        f"Could not parse hparam '{name}' of type '{var_type.__name__}' with "
        f"value '{value}' in {values}"
    )


def _reuse_fail(name: str, values: str) -> None:
    raise ValueError(f"Multiple assignments to variable '{name}' in {values}")


def _bool_parser(name: str, values: str) -> Callable[[str], bool]:
    def parse(text: str) -> bool:
        if text in ("true", "True"):
            return True
        if text in ("false", "False"):
            return False
        try:
            return bool(int(text))
        except ValueError:
            _parse_fail(name, bool, text, values)
            raise  # unreachable: _parse_fail raises

    return parse


def _put_scalar(name: str, index: str | None, value: Any, values: str, out: dict[str, Any]) -> None:
    if not index:
        if name in out:
            _reuse_fail(name, values)
        out[name] = value
        return
    slot = out.setdefault(name, {})
    if not isinstance(slot, dict):
        _reuse_fail(name, values)
    position = int(index)
    if position in slot:
        _reuse_fail(f"{name}[{position}]", values)
    slot[position] = value


def parse_values(
    values: str, type_map: Mapping[str, type], ignore_unknown: bool = False
) -> dict[str, Any]:
    """Parse ``"name=value,name=[v1,v2],name[i]=v"`` into a dict, converting with ``type_map``.

    Raises:
        ValueError: malformed text, an unknown name (unless ``ignore_unknown``), a value that
            does not parse as its type, a name assigned twice, or a list assigned to an index.
    """
    out: dict[str, Any] = {}
    pos = 0
    while pos < len(values):
        match = _PARAM_RE.match(values, pos)
        if not match:
            raise ValueError(f"Malformed hyperparameter value: {values[pos:]}")
        pos = match.end()
        name, index = match.group("name"), match.group("index")
        if name not in type_map:
            if ignore_unknown:
                continue
            known = ", ".join(sorted(type_map))
            raise ValueError(
                f"Unknown hyperparameter type for {name}; the known hyperparameters are: {known}"
            )
        var_type = type_map[name]
        parse: Callable[[str], Any] = _bool_parser(name, values) if var_type is bool else var_type
        if match.group("val") is not None:
            text = match.group("val")
            try:
                parsed = parse(text)
            except ValueError:
                _parse_fail(name, var_type, text, values)
            _put_scalar(name, index, parsed, values, out)
        elif match.group("vals") is not None:
            if index is not None:
                raise ValueError("Assignment of a list to a list index.")
            if name in out:
                _reuse_fail(name, values)
            items = [e for e in re.split("[ ,]", match.group("vals")) if e]
            try:
                out[name] = [parse(e) for e in items]
            except ValueError:
                _parse_fail(name, var_type, match.group("vals"), values)
        else:
            _parse_fail(name, var_type, "", values)
    return out


def _cast(name: str, param_type: type, value: Any) -> Any:
    """``value`` as ``param_type``, refusing the conversions TF 1.15 refused."""
    fail = f"Could not cast hparam '{name}' of type '{param_type}' from value {value!r}"
    if type(value) is param_type or issubclass(param_type, type(None)):
        return value
    text_types = (str, bytes)
    if issubclass(param_type, text_types) and not isinstance(value, text_types):
        raise ValueError(fail)
    if issubclass(param_type, bool) != isinstance(value, bool):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Integral) and not isinstance(value, numbers.Integral):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Number) and not isinstance(value, numbers.Number):
        raise ValueError(fail)
    convert: Callable[[Any], Any] = param_type
    return convert(value)


def _drop_callables(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_callables(v) for k, v in value.items() if not callable(v)}
    if isinstance(value, list):
        return [_drop_callables(v) for v in value if not callable(v)]
    return value


class HParams:
    """Named hyperparameters with fixed types, set from code, a string or JSON.

    Example:
        >>> hp = HParams(learning_rate=0.1, layers=[64, 32], use_bias=True)
        >>> hp.parse("learning_rate=0.3,layers=[128,64]").learning_rate
        0.3
        >>> hp.values()["layers"]
        [128, 64]
    """

    _HAS_DYNAMIC_ATTRIBUTES = True  # tells pytype-like tools attributes are dynamic

    def __init__(self, hparam_def: Any = None, model_structure: Any = None, **kwargs: Any) -> None:
        self._hparam_types: dict[str, tuple[type, bool]] = {}
        self._model_structure = model_structure
        if hparam_def is not None:
            raise Tf2NpuError(
                "HParams(hparam_def=...): building HParams from an HParamDef protocol buffer "
                "is not provided by tf2npu run (TF 2.15 ships no hparam.proto); pass the "
                "values as keyword arguments or use HParams().parse_json(json_text)"
            )
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name: str, value: Any) -> None:
        """Add hyperparameter ``name``; its type is ``type(value)`` (element type for lists).

        Raises:
            ValueError: ``name`` is already a hyperparameter or an HParams attribute, or
                ``value`` is an empty list.
        """
        if getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"Multi-valued hyperparameters cannot be empty: {name}")
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name: str, value: Any) -> None:
        """Set an existing hyperparameter, converting ``value`` to its type.

        Raises:
            KeyError: ``name`` is not a hyperparameter.
            ValueError: a list for a single-valued one, a scalar for a list-valued one, or a
                value that cannot be converted without loss.
        """
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, list):
            if not is_list:
                raise ValueError(f"Must not pass a list for single-valued parameter: {name}")
            setattr(self, name, [_cast(name, param_type, v) for v in value])
        else:
            if is_list:
                raise ValueError(f"Must pass a list for multi-valued parameter: {name}.")
            setattr(self, name, _cast(name, param_type, value))

    def del_hparam(self, name: str) -> None:
        """Remove hyperparameter ``name`` if present."""
        if hasattr(self, name):
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values: str) -> HParams:
        """Override from ``"a=1,b=[2,3],c=text"``; returns self. Unknown names are errors."""
        type_map = {name: kind for name, (kind, _) in self._hparam_types.items()}
        return self.override_from_dict(parse_values(values, type_map))

    def override_from_dict(self, values_dict: Mapping[str, Any]) -> HParams:
        """Set each ``name: value`` with :meth:`set_hparam`; returns self."""
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def parse_json(self, values_json: str) -> HParams:
        """Override from a JSON object text; returns self."""
        return self.override_from_dict(json.loads(values_json))

    def set_model_structure(self, model_structure: Any) -> None:
        self._model_structure = model_structure

    def get_model_structure(self) -> Any:
        return self._model_structure

    def to_json(
        self, indent: int | None = None, separators: Any = None, sort_keys: bool = False
    ) -> str:
        """The values as JSON text; callables are left out (they do not serialise)."""
        return json.dumps(
            _drop_callables(self.values()),
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )

    def values(self) -> dict[str, Any]:
        """A new dict of every hyperparameter's current value."""
        return {name: getattr(self, name) for name in self._hparam_types}

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when absent; a default must fit the type.

        Raises:
            ValueError: ``key`` exists and ``default`` is not None but of an incompatible type.
        """
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            kind = f"list<{param_type}>" if is_list else str(param_type)
            fail = f"Hparam '{key}' of type '{kind}' is incompatible with default={default}"
            if is_list != isinstance(default, list):
                raise ValueError(fail)
            try:
                for item in default if is_list else [default]:
                    _cast(key, param_type, item)
            except ValueError as err:
                raise ValueError(f"{fail}. {err}") from err
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self._hparam_types

    def __str__(self) -> str:
        return str(sorted(self.values().items()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"
