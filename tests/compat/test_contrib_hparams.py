"""tf2npu.compat.contrib.hparams: TF 1.15 HParams semantics (pure Python, no TensorFlow)."""

from __future__ import annotations

import re

import pytest

from tf2npu.compat.contrib.hparams import HParams, parse_values
from tf2npu.errors import Tf2NpuError


def make() -> HParams:
    return HParams(learning_rate=0.1, layers=[64, 32], use_bias=True, name="bert", steps=10)


def test_parse_then_values_round_trip() -> None:
    hp = make().parse("learning_rate=0.3,layers=[128, 64 ,32],use_bias=false,name=albert,steps=7")
    assert hp.values() == {
        "learning_rate": 0.3,
        "layers": [128, 64, 32],
        "use_bias": False,
        "name": "albert",
        "steps": 7,
    }
    again = make().override_from_dict(hp.values())
    assert again.values() == hp.values()
    assert make().parse_json(hp.to_json()).values() == hp.values()


def test_types_convert_like_tf1() -> None:
    hp = make()
    hp.parse("learning_rate=1,use_bias=0")  # int → float is fine; bool accepts 0/1
    assert hp.learning_rate == 1.0 and type(hp.learning_rate) is float
    assert hp.use_bias is False
    hp.set_hparam("steps", 3)
    assert hp.steps == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "momentum=0.9",
            "Unknown hyperparameter type for momentum; the known hyperparameters "
            "are: layers, learning_rate, name, steps, use_bias",
        ),
        ("steps=1.5", "Could not parse hparam 'steps' of type 'int' with value '1.5' in steps=1.5"),
        (
            "use_bias=yes",
            "Could not parse hparam 'use_bias' of type 'bool' with value 'yes' in use_bias=yes",
        ),
        ("steps=1,steps=2", "Multiple assignments to variable 'steps' in steps=1,steps=2"),
        ("layers=5", "Must pass a list for multi-valued parameter: layers."),
        ("steps=[1,2]", "Must not pass a list for single-valued parameter: steps"),
        ("layers[0]=[1]", "Assignment of a list to a list index."),
        ("=3", "Malformed hyperparameter value: =3"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        make().parse(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("name", "value"),
    [("steps", 2.5), ("use_bias", 1), ("learning_rate", True), ("name", 3), ("steps", "4")],
)
def test_set_hparam_refuses_lossy_or_surprising_casts(name: str, value: object) -> None:
    hp = make()
    with pytest.raises(ValueError, match=f"Could not cast hparam '{name}' of type"):
        hp.set_hparam(name, value)


def test_unknown_name_in_set_hparam_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        make().set_hparam("momentum", 0.9)


def test_add_hparam_rules() -> None:
    hp = make()
    hp.add_hparam("dropout", 0.1)
    assert "dropout" in hp and hp.dropout == 0.1
    with pytest.raises(ValueError, match="Hyperparameter name is reserved: dropout"):
        hp.add_hparam("dropout", 0.2)
    with pytest.raises(ValueError, match="Hyperparameter name is reserved: values"):
        hp.add_hparam("values", 1)
    with pytest.raises(ValueError, match="Multi-valued hyperparameters cannot be empty: sizes"):
        hp.add_hparam("sizes", [])
    hp.del_hparam("dropout")
    assert "dropout" not in hp


def test_get_checks_the_default_type() -> None:
    hp = make()
    assert hp.get("steps", 5) == 10
    assert hp.get("absent", "x") == "x"
    with pytest.raises(
        ValueError,
        match=re.escape("Hparam 'steps' of type '<class 'int'>' is incompatible with default=0.5"),
    ):
        hp.get("steps", 0.5)
    with pytest.raises(ValueError, match=r"Hparam 'layers' of type 'list<<class 'int'>>'"):
        hp.get("layers", 3)


def test_str_json_and_callables() -> None:
    hp = HParams(b=2, a="x", fn=len)
    assert str(hp) == "[('a', 'x'), ('b', 2), ('fn', <built-in function len>)]"
    assert repr(hp).startswith("HParams([('a', 'x')")
    assert hp.to_json(sort_keys=True) == '{"a": "x", "b": 2}'


def test_indexed_assignments_parse_into_a_dict() -> None:
    assert parse_values("arr[1]=10,arr[3]=2", {"arr": int}) == {"arr": {1: 10, 3: 2}}
    with pytest.raises(ValueError, match=r"Multiple assignments to variable 'arr\[1\]'"):
        parse_values("arr[1]=10,arr[1]=2", {"arr": int})
    assert parse_values("x=1,other=2", {"x": int}, ignore_unknown=True) == {"x": 1}


def test_hparam_def_is_refused_with_advice() -> None:
    with pytest.raises(Tf2NpuError, match=r"TF 2\.15 ships no hparam\.proto"):
        HParams(hparam_def=object())
