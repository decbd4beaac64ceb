"""Data types, byte counts and units.

SI and binary units are kept strictly apart: kB, MB, GB, TB are 10^3, 10^6, 10^9, 10^12 bytes;
KiB, MiB, GiB, TiB are 2^10, 2^20, 2^30, 2^40 bytes. A bare "GB" never means GiB.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Literal

from costcalc.errors import UsageError, check_choice

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

_BYTE_SUFFIXES: dict[str, int] = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_COUNT_SUFFIXES: dict[str, int] = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
COUNT_SUFFIXES: Mapping[str, int] = _COUNT_SUFFIXES
"""What parse_count reads after a number (lower case; a bare number is a count)."""
BYTE_SUFFIXES: Mapping[str, int] = _BYTE_SUFFIXES
"""What parse_bytes reads after a number (lower case); a bare number is refused."""
MAX_DIGITS = 100
"""Most digits a size may be written with, in a config or on the command line (Python refuses
to convert a number past 4,300 digits anyway)."""

_QUANTITY = r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*"


def dtype_bytes(elements: int, dtype: str) -> int:
    """Bytes to store ``elements`` values of ``dtype``: ceil(elements * bits / 8)."""
    return -(-elements * DTYPE_BITS[dtype] // 8)


def check_dtype(dtype: str) -> str:
    """The dtype name, or a UsageError listing the known ones."""
    return check_choice(dtype, DTYPES, "dtype")


def check_weight_dtype(text: str) -> str:
    """A weight dtype, or a quantized weight format (:func:`costcalc.quant.parse_format`) as
    costcalc writes it (``gptq-int4`` -> ``gptq-int4:g128``); else a UsageError listing both."""
    if text in DTYPE_BITS:
        return text
    from costcalc.quant import parse_format

    return parse_format(text).label


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


def format_percent(ratio: Fraction) -> str:
    """A ratio as a percentage with one decimal, rounded half up: +24.5%."""
    tenths = (ratio * 1000 + Fraction(1, 2)).__floor__()
    return f"{tenths // 10}.{tenths % 10}%"


def _parse(text: str, suffixes: Mapping[str, int], what: str, example: str) -> int:
    match = re.fullmatch(_QUANTITY, text)
    factor = suffixes.get(match.group(2).lower()) if match else None
    if match is None or factor is None:
        units = ", ".join(s for s in suffixes if s) or "none"
        raise UsageError(f"'{text}' is not a {what} (expected e.g. {example}; suffixes: {units})")
    digits = len(match.group(1)) - ("." in match.group(1))
    if digits > MAX_DIGITS:
        raise UsageError(f"a {what} of {digits:,} digits; a {what} has at most {MAX_DIGITS}")
    value = Fraction(match.group(1)) * factor
    if value.denominator != 1:
        raise UsageError(f"'{text}' is not a whole number of {what}s")
    if value == 0:
        raise UsageError(f"'{text}' is not a positive {what}")
    return int(value)


def parse_bytes(text: str) -> int:
    """'24GiB' -> 25,769,803,776; '1.5GB' -> 1,500,000,000; '512B' -> 512; never 0. A bare
    number is refused: 24 could be bytes or GiB, and costcalc never guesses."""
    match = re.fullmatch(_QUANTITY, text)
    if (
        match is not None
        and not match.group(2)
        and len(text) <= MAX_DIGITS
        and Fraction(match.group(1))
    ):
        number = match.group(1)
        raise UsageError(f"{number} what? Give a unit, e.g. {number}GiB, {number}GB or {number}B")
    return _parse(text, {"": 1, **_BYTE_SUFFIXES}, "byte size", "24GiB, 80GB, 512MiB")


def parse_count(text: str) -> int:
    """'30M' -> 30,000,000; '1.5B' -> 1,500,000,000; a bare number is itself; never 0."""
    return _parse(text, _COUNT_SUFFIXES, "count", "30M, 1.5B, 124439808")
