"""Data types, byte counts and units.

SI and binary units are kept strictly apart: kB, MB, GB, TB are 10^3, 10^6, 10^9, 10^12 bytes;
KiB, MiB, GiB, TiB are 2^10, 2^20, 2^30, 2^40 bytes. A bare "GB" never means GiB.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Literal

from costcalc.errors import UsageError, check_choice, shown

DTYPE_BITS: dict[str, int] = {
    "fp32": 32,
    "fp16": 16,
    "bf16": 16,
    "fp8": 8,
    "int8": 8,
    "int4": 4,
}
"""Bits per element. int4 packs two elements per byte."""

DTYPES: tuple[str, ...] = tuple(DTYPE_BITS)

UnitSystem = Literal["si", "iec"]

SI_UNITS = (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3))
IEC_UNITS = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))

BYTE_UNITS: Mapping[str, int] = {
    "B": 1,
    "kB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}
"""What :func:`parse_bytes` reads after a number, in any case; a bare number is refused."""
COUNT_SUFFIXES: Mapping[str, int] = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "B": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
"""What :func:`parse_count` reads after a number, in any case (a bare number is itself)."""
MAX_DIGITS = 100
"""Most digits a size may be written with, in a config or on the command line (Python refuses
to convert a number past 4,300 digits anyway)."""
MAX_COUNT = 10**MAX_DIGITS - 1
"""Most GPUs, tokens per sequence, sequences, prompt or generated tokens a plan takes, and the
largest whole number the Python API takes (at most MAX_DIGITS digits, as a token count): every
time and rate a plan prints then fits a float."""
IEC_DECIMALS = 4
"""Most decimals before a binary unit (``1.0625GiB``): a smaller unit writes more."""
MAX_EXPONENT_DIGITS = 2
"""Most digits of an exponent (``1e12``): a number is at most 10^(MAX_DIGITS + 99) times its
suffix, so turning it into an integer is cheap."""

_NUMBER = re.compile(
    r"\s*(?P<int>[0-9]+(?:_[0-9]+)*)(?:\.(?P<frac>[0-9]+))?(?:[eE]\+?(?P<exp>[0-9]+))?\s*"
    r"(?P<unit>[A-Za-z]*)\s*"
)
"""A number as costcalc reads it: digits (``_`` between groups), decimals, an exponent, a unit."""


def dtype_bytes(elements: int, dtype: str) -> int:
    """Bytes to store ``elements`` values of ``dtype``: ceil(elements * bits / 8)."""
    return -(-elements * DTYPE_BITS[dtype] // 8)


def check_dtype(dtype: str) -> str:
    """The dtype name, or a UsageError listing the known ones."""
    return check_choice(dtype, DTYPES, "dtype")


def format_bytes(n: int, system: UnitSystem = "si") -> str:
    """``n`` bytes in the largest unit of ``system`` that keeps the value >= 1, two decimals
    rounded half up, in integer arithmetic (exact at any size)."""
    for name, size in SI_UNITS if system == "si" else IEC_UNITS:
        if n >= size:
            hundredths = (n * 100 + size // 2) // size
            return f"{hundredths // 100:,}.{hundredths % 100:02d} {name}"
    return f"{n:,} B"


def format_count(n: int) -> str:
    """A count with thousands separators: 124,439,808."""
    return f"{n:,}"


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 expert``, ``2 experts``: ``count`` and ``word``, or ``words`` (default ``word`` + s)
    when the count is not 1."""
    return f"{count:,} {word if count == 1 else words or word + 's'}"


def format_percent(ratio: Fraction) -> str:
    """A ratio as a percentage with one decimal, rounded half up: +24.5%."""
    tenths = (ratio * 1000 + Fraction(1, 2)).__floor__()
    return f"{tenths // 10}.{tenths % 10}%"


COUNT_EXAMPLES = "8k, 8Ki, 30M, 1.5B, 1e12 or 124_439_808"
BYTE_EXAMPLES = "24GiB, 80GB, 512MiB or 1.5e9B"


def parse_count(text: str) -> int:
    """A positive whole count: ``8k`` -> 8,000; ``8Ki`` -> 8,192; ``1.5B`` -> 1,500,000,000;
    ``1e12``; ``124_439_808``. k, M, B, T are 10^3 to 10^12, Ki, Mi, Gi, Ti 2^10 to 2^40 (any
    case); an exponent takes no suffix. A value that is not whole after scaling is refused."""
    return _parse(text, COUNT_SUFFIXES, "count")


def parse_bytes(text: str) -> int:
    """A positive whole byte size: ``24GiB`` -> 25,769,803,776; ``1.5GB`` -> 1,500,000,000;
    ``512B``; ``1.5e9B``. A bare number is refused (24 could be bytes or GiB), and so is a prefix
    without ``B`` (``24G``: GB or GiB?): costcalc never guesses."""
    return _parse(text, BYTE_UNITS, "byte size")


def _parse(text: str, units: Mapping[str, int], what: str) -> int:
    """``text`` as a positive whole number of ``units``; a UsageError saying what is wrong."""
    match = _NUMBER.fullmatch(text)
    if match is None:
        raise UsageError(_malformed(text, what))
    digits = sum(c in "0123456789" for c in text)
    if digits > MAX_DIGITS:
        raise UsageError(f"a {what} of {digits:,} digits; a {what} has at most {MAX_DIGITS}")
    factor = _in_any_case(units).get(match.group("unit").lower())
    if factor is None:
        raise UsageError(_unknown_unit(text, match, units, what))
    exponent = match.group("exp")
    if exponent is not None and factor != 1:
        raise UsageError(f"'{shown(text)}': an exponent or a suffix, not both")
    if exponent is not None and len(exponent) > MAX_EXPONENT_DIGITS:
        raise UsageError(f"'{shown(text)}': an exponent has at most {MAX_EXPONENT_DIGITS} digits")
    whole, decimals = match.group("int").replace("_", ""), match.group("frac") or ""
    if factor & (factor - 1) == 0 and factor > 1 and len(decimals.rstrip("0")) > IEC_DECIMALS:
        raise UsageError(
            f"'{shown(text)}': at most {IEC_DECIMALS} decimals before a binary unit; "
            "write it in a smaller unit"
        )
    value = Fraction(int(whole + decimals), 10 ** len(decimals)) * factor
    value *= 10 ** int(exponent or 0)
    if value.denominator != 1:
        noun = " bytes" if units is BYTE_UNITS else ""
        raise UsageError(f"'{shown(text)}' is {_decimal(value)}{noun}: not a whole number")
    if value == 0:
        raise UsageError(f"'{shown(text)}' is not a positive {what}")
    return int(value)


def _malformed(text: str, what: str) -> str:
    """Why ``text`` is not a number at all, and how one is written."""
    examples = COUNT_EXAMPLES if what == "count" else BYTE_EXAMPLES
    raw = text.strip()
    if raw.startswith("-") and _NUMBER.fullmatch(raw[1:]):
        return f"'{shown(text)}': a {what} cannot be negative"
    if "," in raw and _NUMBER.fullmatch(raw.replace(",", "")):
        return (
            f"'{shown(text)}': a comma is not read in a number; "
            f"write {raw.replace(',', '_')} or {raw.replace(',', '')}"
        )
    return f"'{shown(text)}' is not a {what} (expected e.g. {examples})"


def _unknown_unit(text: str, match: re.Match[str], units: Mapping[str, int], what: str) -> str:
    """Why the unit after the number of ``text`` is not one of ``units``."""
    number, unit = text[: match.start("unit")].strip(), match.group("unit")
    if units is BYTE_UNITS and not unit:
        if not any(c in "123456789" for c in number.partition("e")[0].partition("E")[0]):
            return f"'{shown(text)}' is not a positive {what}"
        if match.group("exp") is not None:
            return f"{number} what? Give a unit: {number}B is {number} bytes"
        return f"{number} what? Give a unit, e.g. {number}GiB, {number}GB or {number}B"
    if units is BYTE_UNITS and unit.lower().removesuffix("i") in ("k", "m", "g", "t"):
        prefix = unit[0].upper()
        si = "kB" if prefix == "K" else f"{prefix}B"
        power = "KMGT".index(prefix) + 1
        return (
            f"'{shown(text)}': {shown(unit)} what? A size takes a byte unit: {number}{si} is "
            f"{number} x 10^{3 * power} bytes, {number}{prefix}iB is {number} x 2^{10 * power}"
        )
    if units is COUNT_SUFFIXES and unit.lower() in _in_any_case(BYTE_UNITS):
        return (
            f"'{shown(text)}' is a byte size; a count takes k, M, B, T (10^3 to 10^12) or Ki, "
            "Mi, Gi, Ti (2^10 to 2^40)"
        )
    known = ", ".join(u for u in units if u)
    return f"'{shown(text)}' is not a {what}: unknown unit '{shown(unit)}' (units: {known})"


def _in_any_case(units: Mapping[str, int]) -> dict[str, int]:
    return {unit.lower(): factor for unit, factor in units.items()}


def _decimal(value: Fraction) -> str:
    """A fraction whose denominator divides a power of ten, written out exactly: 1,234.5."""
    places = 0
    while (value * 10**places).denominator != 1:
        places += 1
    scaled = int(value * 10**places)
    return f"{scaled // 10**places:,}.{scaled % 10**places:0{places}d}"


def quantity_pattern(units: Mapping[str, int]) -> str:
    """A regular expression (JSON Schema's dialect too) matching exactly the strings
    :func:`parse_count` (``units`` :data:`COUNT_SUFFIXES`) or :func:`parse_bytes`
    (:data:`BYTE_UNITS`) read as a positive whole number: a non-zero digit before any exponent,
    at most MAX_DIGITS digits in all, digits grouped by ``_``, a unit in any case.

    After a unit of 10^k the number may have k decimals (then only zeros); after one of 2^j a
    decimal tail is whole when, written as n digits, it is a multiple of 5^n: every such tail of
    up to IEC_DECIMALS digits (the most the parser reads) is listed (``.5``, ``.25``, ``.125``,
    ...). An exponent e (at most two digits, no unit but bytes' B) allows e decimals.
    """
    numbers = []
    whole = "[0-9]+(?:_[0-9]+)*"
    for unit, factor in units.items():
        numbers.append(rf"{whole}{_whole_decimals(factor)}\s*{_any_case(unit)}")
    plain = _any_case(next(u for u, f in units.items() if f == 1))
    for e in range(10**MAX_EXPONENT_DIGITS):
        exponent = f"0?{e}" if e < 10 else str(e)
        numbers.append(rf"{whole}{_whole_decimals(10**e)}[eE]\+?{exponent}\s*{plain}")
    nonzero, short = "(?=[^1-9eE]*[1-9])", f"(?!(?:[^0-9]*[0-9]){{{MAX_DIGITS + 1}}})"
    return rf"^{nonzero}{short}\s*(?:{'|'.join(numbers)})\s*$"


def _any_case(unit: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" for c in unit)


def _whole_decimals(factor: int) -> str:
    """A pattern for the decimals (optional) that keep a number times ``factor`` whole."""
    k = 0
    while factor % 10 ** (k + 1) == 0:
        k += 1
    if factor == 10**k:
        return rf"(?:\.[0-9]{{1,{k}}}0*)?" if k else r"(?:\.0+)?"
    tails = [
        f"{tail:0{n}d}"
        for n in range(1, IEC_DECIMALS + 1)
        for tail in range(5**n, 10**n, 5**n)
        if tail % 10
    ]
    return rf"(?:\.(?:0+|(?:{'|'.join(tails)})0*))?"
