"""One number syntax for every count and size option: the same table of spellings read by the
options of each class (counts, lengths, tokens, sizes, budgets), every integer option of every
command reading it, and the JSON Schema's pattern matching exactly what the parser reads."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st

from costcalc.cli.app import COMMANDS, _build
from costcalc.cli.common import _count, _reserve, _size, _value_type
from costcalc.errors import UsageError
from costcalc.units import BYTE_UNITS, COUNT_SUFFIXES, parse_bytes, parse_count, quantity_pattern

# (written, read as a count, read as a byte size): an int is the value, a str the error's words
SPELLINGS: list[tuple[str, int | str, int | str]] = [
    ("2048", 2048, "2048 what? Give a unit, e.g. 2048GiB, 2048GB or 2048B"),
    ("124_439_808", 124_439_808, "124_439_808 what? Give a unit"),
    ("8k", 8_000, "'8k': k what? A size takes a byte unit: 8kB is 8 x 10^3 bytes, 8KiB is 8 x 2^"),
    ("8K", 8_000, "'8K': K what?"),
    ("8Ki", 8_192, "'8Ki': Ki what?"),
    ("128Ki", 131_072, "'128Ki': Ki what?"),
    ("30M", 30_000_000, "'30M': M what?"),
    ("1.5B", 1_500_000_000, "'1.5B' is 1.5 bytes: not a whole number"),
    ("1T", 10**12, "'1T': T what?"),
    ("1e12", 10**12, "1e12 what? Give a unit: 1e12B is 1e12 bytes"),
    ("5.76e23", 576 * 10**21, "5.76e23 what?"),
    ("1.5E+9", 1_500_000_000, "1.5E+9 what?"),
    ("24GB", "'24GB' is a byte size; a count takes k, M, B, T", 24 * 10**9),
    ("24GiB", "'24GiB' is a byte size", 24 * 2**30),
    ("1.5e9B", "'1.5e9B': an exponent or a suffix, not both", 1_500_000_000),
    ("512b", 512 * 10**9, 512),
    (
        "24G",
        "'24G' is not a count: unknown unit 'G' (units: k, M, B, T, Ki, Mi, Gi, Ti)",
        "'24G': G what? A size takes a byte unit: 24GB is 24 x 10^9 bytes, 24GiB is 24 x 2^30",
    ),
    ("1.2345k", "'1.2345k' is 1,234.5: not a whole number", "'1.2345k': k what?"),
    ("1.1GiB", "is a byte size", "'1.1GiB' is 1,181,116,006.4 bytes: not a whole number"),
    ("1.03125Gi", "at most 4 decimals before a binary unit", "'1.03125Gi': Gi what?"),
    ("1e3k", "'1e3k': an exponent or a suffix, not both", "'1e3k': k what?"),
    ("1e100", "'1e100': an exponent has at most 2 digits", "1e100 what?"),
    ("0", "'0' is not a positive count", "'0' is not a positive byte size"),
    ("0.0k", "'0.0k' is not a positive count", "'0.0k': k what?"),
    ("-5", "'-5': a count cannot be negative", "'-5': a byte size cannot be negative"),
    (
        "1,024",
        "'1,024': a comma is not read in a number; write 1_024 or 1024",
        "'1,024': a comma is not read in a number",
    ),
    ("30X", "unknown unit 'X'", "unknown unit 'X' (units: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)"),
    ("lots", "'lots' is not a count (expected e.g. 8k, 8Ki, 30M, 1.5B, 1e12 or 124_439_808)", ""),
    ("9" * 101, "a count of 101 digits; a count has at most 100", "a byte size of 101 digits"),
]

# (command, arguments it needs, option, its parameter): a class of options, each as users give it
COUNTS = [
    ("params", ["-p", "gpt2"], "--layers", "layers"),
    ("heads", ["--d", "256"], "--heads", "h"),
    ("memory", ["-p", "gpt2"], "--gpus", "gpus"),
    ("lora", ["-p", "gpt2"], "--rank", "rank"),
    ("params", ["-p", "gpt2"], "--batch", "batch"),
]
LENGTHS = [
    ("params", ["-p", "gpt2"], "--length", "length"),
    ("memory", ["-p", "gpt2"], "-T", "length"),
    ("plan", ["-p", "gpt2", "--gpu", "h100-sxm"], "-T", "length"),
    ("check", ["x.yaml"], "--length", "length"),
    ("scale", [], "--length", "length"),
    ("params", ["-p", "gpt2"], "--context", "context"),
]
TOKENS = [
    ("plan", ["-p", "gpt2", "--gpu", "h100-sxm"], "--tokens", "tokens"),
    ("plan", ["-p", "gpt2", "--gpu", "h100-sxm"], "--prompt", "prompt"),
    ("params", ["-p", "gpt2"], "--generate", "generate"),
]
SIZES = [
    ("memory", ["-p", "gpt2"], "--fits", "fits"),
    ("memory", ["-p", "gpt2"], "--gpu-memory", "fits"),
    ("lora", ["-p", "gpt2"], "--fits", "fits"),
]
BUDGETS = [
    ("plan", ["-p", "gpt2", "--gpu", "h100-sxm"], "--budget", "budget"),
    ("check", ["x.yaml"], "--max-params", "max_params"),
]
BYTE_BUDGETS = [("check", ["x.yaml"], "--max-weight-bytes", "max_weight_bytes")]


def parsed(command: str, args: list[str], option: str, name: str, text: str) -> Any:
    """The value ``costcalc COMMAND ARGS OPTION TEXT`` gives the command's parameter ``name``
    (the options parsed, the command not run), or the message it fails with."""
    cmd = _build(command)
    try:
        ctx = cmd.make_context(command, [*args, option, text])
    except typer.Exit as exc:
        assert exc.exit_code == 2
        return None
    value = ctx.params[name]
    return value[0] if isinstance(value, (list, tuple)) else value


def check_spellings(
    options: list[tuple[str, list[str], str, str]], column: int, capsys: Any
) -> None:
    for command, args, option, name in options:
        for row in SPELLINGS:
            text, expected = row[0], row[column]
            value = parsed(command, args, option, name, text)
            err = capsys.readouterr().err
            if isinstance(expected, int):
                assert value == expected, (command, option, text)
                assert err == ""
            else:
                assert value is None, (command, option, text, value)
                main = next(o for o in _build(command).params if option in o.opts).opts[0]
                assert err.startswith(f"error: {main}: ") and expected in err, (option, err)


def test_counts(capsys: Any) -> None:
    check_spellings(COUNTS, 1, capsys)


def test_lengths(capsys: Any) -> None:
    check_spellings(LENGTHS, 1, capsys)


def test_tokens(capsys: Any) -> None:
    check_spellings(TOKENS, 1, capsys)


def test_sizes(capsys: Any) -> None:
    check_spellings(SIZES, 2, capsys)


def test_budgets(capsys: Any) -> None:
    check_spellings(BUDGETS, 1, capsys)
    check_spellings(BYTE_BUDGETS, 2, capsys)


@pytest.mark.parametrize("text", [row[0] for row in SPELLINGS])
def test_overrides_after_a_name_read_counts_alike(text: str) -> None:
    from costcalc.overrides import split_overrides

    expected = next(row[1] for row in SPELLINGS if row[0] == text)
    if isinstance(expected, int):
        assert split_overrides(f"gpt2:d={text}")[1] == {"d_model": expected}
    elif "," not in text:  # a comma separates fields
        with pytest.raises(UsageError, match=re.escape(expected)) as raised:
            split_overrides(f"gpt2:d={text}")
        assert str(raised.value).startswith("d_model: ")


NOT_COUNTS = {("memory", "--zero"), ("lora", "--zero")}
"""Integer options that are no count: a ZeRO stage is one of 1, 2, 3."""


def test_every_integer_option_reads_the_number_syntax() -> None:
    """An option of any command whose value is a whole number goes through the one parser, so
    an option added later cannot miss it."""
    seen = 0
    for command in COMMANDS:
        if command == "presets":
            continue
        for param in _build(command).params:
            if not param.opts[0].startswith("--") or _value_type(param) is not int:
                continue
            parser = param.type_descriptor.parameter_info.parser
            if (command, param.opts[0]) in NOT_COUNTS:
                assert parser is None
                continue
            seen += 1
            assert parser in (_count, _size, _reserve), (command, param.opts[0])
    assert seen > 40


def test_an_exponent_is_exact() -> None:
    """1e23 is 10^23 not the float nearest it (99,999,999,999,999,991,611,392)."""
    assert parse_count("1e23") == 10**23 != int(1e23)
    assert parse_count("5.76e23") == 576 * 10**21
    assert parse_count("1.5E+9") == 1_500_000_000


def test_a_huge_exponent_is_refused_before_it_is_computed() -> None:
    with pytest.raises(UsageError, match="an exponent has at most 2 digits"):
        parse_count("1e999999999")


NUMBERS = st.builds(
    lambda *parts: "".join(parts),
    st.sampled_from(["", " "]),
    st.sampled_from(["0", "1", "5", "10", "00", "1_000", "12_3", "1__0", "_1", "9" * 99, ""]),
    st.sampled_from(["", ".", ".0", ".5", ".25", ".0625", ".03125", ".2345", ".50", ".1" * 7]),
    st.sampled_from(["", "e", "E+", "e-", "e0", "e3", "e05", "e12", "e99", "e100"]),
    st.sampled_from(["", " "]),
    st.sampled_from([*COUNT_SUFFIXES, *BYTE_UNITS, "x", "G", "kb", "KIB", "gi", "iB"]),
    st.sampled_from(["", " ", "x"]),
)


@given(NUMBERS)
def test_the_schema_pattern_reads_what_the_parser_reads(text: str) -> None:
    """`costcalc schema` and `costcalc check` agree on every budget value (an editor validating a
    config says what check will say)."""
    for units, parse in ((COUNT_SUFFIXES, parse_count), (BYTE_UNITS, parse_bytes)):
        try:
            parse(text)
            read = True
        except UsageError:
            read = False
        assert bool(re.match(quantity_pattern(units), text)) == read, (text, units)
