"""The caps every config is held to, whatever its format: nesting, values, key length.

A YAML file is held to them once its aliases are expanded, a JSON file and a mapping given in
Python as they are parsed (``costcalc.files``, ``costcalc.yaml_reader``)."""

from __future__ import annotations

from costcalc.errors import FileReadError

MAX_DEPTH = 64
"""Deeper nesting than this is no model config."""

MAX_VALUES = 10_000
"""Most values (keys included) a file may hold, a YAML file's once its aliases are expanded."""

MAX_KEY_CHARS = 256
"""Longest key a config may hold."""

KeyPath = tuple[str, ...]

EMPTY = object()
"""What a file without any content parses to (distinct from an explicit ``null``)."""

TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep; refused"


def check_key(key: str, name: str, line: int | None) -> None:
    """Refuse a key over MAX_KEY_CHARS characters."""
    if len(key) > MAX_KEY_CHARS:
        reason = f"a key of {len(key):,} characters; a config key has at most {MAX_KEY_CHARS}"
        raise FileReadError(name, reason, line)


def under(prefix: KeyPath) -> str:
    """Where a key sits, as a message says it: `` under budget``, nothing at the top."""
    return f" under {'.'.join(prefix)}" if prefix else ""


def duplicate_key(key: str, prefix: KeyPath, first_line: int) -> str:
    """Why a key given twice in one mapping is refused (YAML and JSON would keep the last)."""
    return f"duplicate key '{key}'{under(prefix)} (first on line {first_line})"


def too_long(digits: int) -> str:
    """Why an integer of ``digits`` digits (over MAX_DIGITS) is refused."""
    return f"an integer of {digits:,} digits is too long for a config value"


class RefusedValueError(Exception):
    """A value a reader refuses: why, and the line and column (1-based) where known; the
    reader turns it into a FileReadError naming the file."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None) -> None:
        self.reason = reason
        self.line = line
        self.column = column
