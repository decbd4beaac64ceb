"""The Python API checks its arguments at the boundary: a value of the wrong type is a UsageError
naming the function and the argument, a number out of its range a RangeError, a mapping that no
file could hold (keys not text, NaN, objects, too many values, a mapping that holds itself) a
FileReadError, never Python's own error from deep inside or a hang."""

from __future__ import annotations

import math
from typing import Any

import pytest

import costcalc
from costcalc.errors import CostcalcError, FileReadError, RangeError, UsageError
from tests.conftest import Invoke

GPT2 = "gpt2-small"
TINY = {"vocab_size": 64, "context_length": 8, "d_model": 8, "n_layers": 1, "n_heads": 2}


def _holding_itself() -> dict[str, Any]:
    data: dict[str, Any] = dict(TINY)
    data["itself"] = data
    return data


CASES: list[tuple[str, tuple[Any, ...], dict[str, Any], type[CostcalcError], str]] = [
    ("load", (123,), {}, UsageError, "load(): source is int 123; expected a preset name"),
    ("load", (None,), {}, UsageError, "load(): source is NoneType None"),
    ("load", (GPT2,), {"revision": 5}, UsageError, "revision is int 5; expected a string"),
    ("load", ({1: 2},), {}, FileReadError, "<dict>: the top: key 1 is not text"),
    ("load", (TINY | {"d_model": math.nan},), {}, FileReadError, "d_model: nan is not a number"),
    ("load", (TINY | {"d_model": object()},), {}, FileReadError, "object is no config value"),
    ("load", (_holding_itself(),), {}, FileReadError, "nested more than 64 levels deep"),
    ("load", (TINY | {"d_model": 10**200},), {}, FileReadError, "over 100 digits is too long"),
    ("load", ({"layers": [{"count": 1}] * 20_000},), {}, FileReadError, "over 10,000 values"),
    ("count", (b"gpt2",), {}, UsageError, "count(): model is bytes"),
    ("count_macs", (GPT2,), {"length": "4"}, UsageError, "length is str '4'; expected a whole"),
    ("count_macs", (GPT2,), {"length": 2.5}, UsageError, "length is float 2.5"),
    ("count_macs", (GPT2,), {"length": True}, UsageError, "length is bool True"),
    ("count_macs", (GPT2,), {"length": -4}, RangeError, "length -4: expected a whole number"),
    ("count_macs", (GPT2,), {"length": 10**1000}, RangeError, "length of about 1,001 digits"),
    ("count_macs", (GPT2,), {"length": 8, "batch": 10**100}, RangeError, "batch of about 101"),
    ("count_macs", (GPT2,), {"length": 8, "causal": "no"}, UsageError, "causal is str 'no'"),
    ("count_memory", (GPT2,), {"train": "yes"}, UsageError, "train is str 'yes'"),
    ("count_memory", (GPT2,), {"dtype": 5}, UsageError, "dtype is int 5; expected a string"),
    ("count_memory", (GPT2,), {"fits": -5}, RangeError, "fits -5: expected a whole number"),
    ("count_memory", (GPT2,), {"fits": 2.5e9}, UsageError, "fits is float"),
    ("count_memory", (GPT2,), {"gpus": [2]}, UsageError, "gpus is list [2]"),
    ("count_memory", (GPT2,), {"gpus": 3, "tp": 2}, UsageError, "gpus=3: serving runs"),
    ("count_memory", (GPT2,), {"gpus": 3, "tp": 2}, UsageError, "give gpus= that product"),
    ("count_memory", (GPT2,), {"tp": 2, "ep": 3}, UsageError, "give tp= and dp_attention="),
    ("count_lora", (GPT2,), {"targets": "c_attn"}, UsageError, "expected a list of strings"),
    ("count_lora", (GPT2,), {"targets": ["c_attn", 1]}, UsageError, "expected a list of strings"),
    ("count_lora", (GPT2,), {"targets": ["c_attn"], "rank": 2**31}, RangeError, "rank 2147483648"),
    ("count_lora", (GPT2,), {"targets": ["c_attn"], "rank": 8.0}, UsageError, "rank is float"),
]


@pytest.mark.parametrize(
    ("function", "args", "kwargs", "error", "message"), CASES, ids=lambda v: repr(v)[:40]
)
def test_arguments_are_checked_at_the_boundary(
    function: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    error: type[CostcalcError],
    message: str,
) -> None:
    with pytest.raises(error) as raised:
        getattr(costcalc, function)(*args, **kwargs)
    assert message in str(raised.value)
    assert type(raised.value) is error


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"length": 0}, ("--length", "0")),
        ({"batch": -1}, ("--batch", "-1")),
        ({"length": 10**100}, ("--length", "1" + "0" * 100)),
        ({"length": 2000}, ("--length", "2000")),
    ],
)
def test_a_range_error_has_the_exit_code_the_command_line_gives(
    cli: Invoke, kwargs: dict[str, int], option: tuple[str, str]
) -> None:
    """A count of zero, below zero or of over 100 digits is wrong usage (2) in both; a length
    past gpt2's learned positions is a value the model cannot take (1) in both."""
    with pytest.raises(RangeError) as raised:
        costcalc.count_memory(GPT2, **kwargs)
    assert raised.value.exit_code == cli("memory", "-p", GPT2, *option).exit_code
    assert raised.value.exit_code == (1 if kwargs == {"length": 2000} else 2)


def test_good_calls_still_work() -> None:
    assert costcalc.count(dict(TINY)).parameters.total > 0
    assert costcalc.count_macs("qwen2.5-0.5b", length=10**99).forward.total > 0
    lora = costcalc.count_lora(GPT2, targets=("qkv_proj",), rank=2**31 - 1)
    assert lora.to_dict()["trainable"] > 2**31


@pytest.mark.parametrize(
    ("function", "args", "kwargs", "message"),
    [
        ("count", (), {}, "missing a required argument: 'model'"),
        ("count", (GPT2, 5), {}, "too many positional arguments"),
        ("count_macs", (GPT2,), {"lenght": 8}, "got an unexpected keyword argument 'lenght'"),
        ("load", (GPT2,), {"source": GPT2}, "multiple values for argument 'source'"),
        ("count_lora", (GPT2,), {"rank": 8.0}, "missing a required argument: 'targets'"),
    ],
)
def test_a_call_that_does_not_fit_the_signature_is_a_type_error(
    function: str, args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    """Python's own error for a call it could not make, before any value is checked."""
    with pytest.raises(TypeError, match=message):
        getattr(costcalc, function)(*args, **kwargs)


def test_the_first_wrong_argument_is_named() -> None:
    with pytest.raises(UsageError, match="batch is str"):
        costcalc.count_macs(GPT2, length="8", batch="1")
    with pytest.raises(UsageError, match="targets is str"):
        costcalc.count_lora(GPT2, rank=8.0, targets="c_attn")


def test_overrides_are_not_checked_as_arguments() -> None:
    """``load``'s overrides are ModelSpec fields, checked by the spec: any name, any value."""
    assert costcalc.load(GPT2, n_layers=2).spec.n_layers == 2
