"""Reading config files safely: YAML or JSON into a mapping, with the line of every key.

Whatever is wrong with a file (missing, a directory, too large, binary, not UTF-8, malformed,
several documents, duplicate keys, tags that would build Python objects, a tagged value its tag
cannot read, integers not in plain decimal, too many values, nesting too deep, keys too long)
becomes one :class:`FileReadError` naming the file and, where known, the line. JSON may hold
``NaN``, ``Infinity`` and ``-Infinity`` (as Python's ``json`` writes them) and transformers 5's
``{"__float__": "Infinity"}``, read as the float they name, as transformers reads them: a Hugging
Face config holds them in keys that size nothing (``time_step_limit``), and whatever reads a key
refuses one that is not finite (:func:`check_finite` for costcalc's own formats). JSON and YAML
share one set of caps, and the work done is linear in the size of the file. Booleans are YAML
1.2's: ``true`` and ``false``; ``yes``, ``no``, ``on`` and ``off`` are text.
"""

from __future__ import annotations

import codecs
import errno
import json
import math
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from costcalc.errors import FileReadError
from costcalc.file_limits import (
    EMPTY,
    MAX_DEPTH,
    MAX_VALUES,
    TOO_DEEP,
    KeyPath,
    RefusedValueError,
    check_key,
    duplicate_key,
    too_long,
    under,
)
from costcalc.units import MAX_DIGITS

MAX_FILE_BYTES = 1024 * 1024
"""A model config is a few hundred bytes; anything over 1 MiB is refused before it is read."""


@dataclass(frozen=True)
class Document:
    """A parsed config file: its top-level mapping and the line (1-based) of each key."""

    path: str
    data: dict[str, Any]
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_of(self, key_path: KeyPath) -> int | None:
        """The line of ``key_path``, or of its nearest enclosing key that has one."""
        for end in range(len(key_path), 0, -1):
            line = self.lines.get(key_path[:end])
            if line is not None:
                return line
        return None


CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".py", ".toml", ".txt", ".safetensors", ".gguf")
"""Endings of file names, never of a Hub id."""


def looks_like_path(text: str) -> bool:
    """Whether ``text`` can only be a path: it starts ``./``, ``../``, ``/`` or ``~``, holds a
    backslash or more than the one ``/`` of ``ORG/NAME``, or ends like a file
    (:data:`CONFIG_SUFFIXES`). A Hub id is none of these (``hf://`` makes one explicit)."""
    name = text.split("@", 1)[0]
    return (
        text.startswith(("./", "../", "/", "~"))
        or "\\" in text
        or name.count("/") > 1
        or name.lower().endswith(CONFIG_SUFFIXES)
    )


PYTHON_REFUSED = (
    "a Python file: costcalc never executes Python; write its values as YAML (n_layer: 12 for "
    "nanoGPT's n_layer = 12) or JSON, and pass that file (docs/config.md)"
)
"""Why a ``.py`` config (nanoGPT's ``config/train_*.py``) is refused."""


def read_document(path: str | Path) -> Document:
    """Read ``path`` as JSON (``.json``) or YAML (anything else but Python, refused) into a
    :class:`Document`."""
    suffix = Path(path).suffix.lower()
    text = read_text(path)
    if suffix == ".py":
        raise FileReadError(str(path), PYTHON_REFUSED)
    return parse_document(text, str(path), json_text=suffix == ".json")


def parse_document(text: str, name: str, json_text: bool = False) -> Document:
    """Parse ``text`` (JSON or YAML, named ``name`` in errors) into a :class:`Document`."""
    if json_text:
        data, lines = _parse_json(text, name)
    else:
        from costcalc.yaml_reader import parse_yaml

        data, lines = parse_yaml(text, name)
    if data is EMPTY:
        raise FileReadError(name, "empty file; expected a mapping of keys to values")
    if not isinstance(data, dict):
        raise FileReadError(
            name, f"expected a mapping of keys to values at the top, found {_type_name(data)}"
        )
    doc = Document(name, data, lines)
    if not json_text:
        check_finite(doc)
    return doc


def check_finite(doc: Document) -> None:
    """Refuse a document holding NaN or an infinity anywhere (YAML's .nan, .inf; JSON's
    Infinity, 1e999): in costcalc's own formats every number is a size or a setting."""
    _check_values(doc.data, doc.path, doc.lines, ())


_WIDE_MARKS = (
    ("UTF-32", codecs.BOM_UTF32_LE),
    ("UTF-32", codecs.BOM_UTF32_BE),
    ("UTF-16", codecs.BOM_UTF16_LE),
    ("UTF-16", codecs.BOM_UTF16_BE),
)
"""Byte-order marks of the encodings editors save besides UTF-8 (Windows' "Unicode" is
UTF-16): UTF-32's first, since its little-endian mark begins with UTF-16's."""


def _utf16_unmarked(raw: bytes) -> str | None:
    """What UTF-16 text without a byte-order mark is, told by its NUL bytes: a config's text is
    mostly ASCII, whose every character is a NUL byte beside its code, the NUL second in
    little-endian order, first in big-endian. Called so when the other bytes hold no NUL and
    at least half the characters have one; None for anything else."""
    if len(raw) < 2 or len(raw) % 2:
        return None
    for order, codes, highs in (("little", raw[0::2], raw[1::2]), ("big", raw[1::2], raw[0::2])):
        if 0 not in codes and 2 * highs.count(0) >= len(highs):
            return f"UTF-16 text ({order}-endian, its NUL bytes say so: it has no byte-order mark)"
    return None


def read_text(path: str | Path) -> str:
    """The file's text, refusing what is missing, not a file, too large, binary or not UTF-8."""
    name = str(path)
    raw = read_bytes(path, MAX_FILE_BYTES)
    mark = next((label for label, mark in _WIDE_MARKS if raw.startswith(mark)), None)
    wide = f"{mark} text (its byte-order mark says so)" if mark else None
    if wide is None and b"\x00" in raw:
        wide = _utf16_unmarked(raw)
        if wide is None:
            raise FileReadError(name, "binary file (contains NUL bytes), not a text config")
    if wide is not None:
        raise FileReadError(
            name,
            f"{wide}; configs are read as UTF-8, as transformers reads config.json: save the "
            "file as UTF-8",
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise FileReadError(name, f"not UTF-8 text (byte {exc.start})", line) from None


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def read_bytes(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, refused when over ``limit``.

    The file is opened once, without blocking (a FIFO never waits for a writer), and judged by
    ``fstat`` on the open descriptor, so a file swapped for another kind after it was listed is
    refused too; its size is judged before anything is read, and at most one byte past the
    limit is ever read.
    """
    name = str(path)
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
        try:
            _refuse_kind(os.fstat(descriptor), name, limit)
            raw = _read_up_to(descriptor, limit + 1)
        finally:
            os.close(descriptor)
    except FileReadError:
        raise
    except OSError as exc:
        raise FileReadError(name, os_reason(exc)) from None
    if len(raw) > limit:
        raise FileReadError(name, f"file is over {limit:,} bytes; refused")
    return raw


def _refuse_kind(info: os.stat_result, name: str, limit: int) -> None:
    """Refuse a directory, anything but a regular file, and a file over ``limit`` bytes."""
    if stat.S_ISDIR(info.st_mode):
        raise FileReadError(name, "is a directory, not a config file")
    if not stat.S_ISREG(info.st_mode):
        raise FileReadError(name, _NOT_REGULAR)
    if info.st_size > limit:
        size = info.st_size
        raise FileReadError(name, f"file is {size:,} bytes; a file over {limit:,} is refused")


def _read_up_to(descriptor: int, limit: int) -> bytes:
    chunks = []
    while limit > 0 and (chunk := os.read(descriptor, limit)):
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


_NOT_REGULAR = "not a regular file (a device, FIFO or socket)"


def os_reason(exc: OSError) -> str:
    """What went wrong with a file or directory, without repeating its name."""
    reasons = {
        errno.ENOENT: "no such file",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOTDIR: "a part of the path is not a directory",
        errno.ELOOP: "too many levels of symbolic links",
        errno.ENAMETOOLONG: "file name too long",
        errno.ENXIO: _NOT_REGULAR,
        errno.EISDIR: "is a directory",
    }
    return reasons.get(exc.errno or 0) or f"cannot read: {exc.strerror or exc}"


_SURROGATE = re.compile("[\ud800-\udfff]")
"""Half of a UTF-16 pair, which JSON's \\u escapes can write alone: no character at all."""


class _Pairs(list[tuple[str, Any]]):
    """A JSON object's (key, value) pairs as written, a key given twice kept twice."""


def _parse_json(text: str, name: str) -> tuple[Any, dict[KeyPath, int]]:
    def checked_int(digits: str) -> int:
        if len(digits) > MAX_DIGITS:
            raise RefusedValueError(too_long(len(digits)), _line_at(text, text.find(digits)))
        return int(digits)

    if not text.strip():
        return EMPTY, {}
    try:
        pairs = json.loads(
            text,
            parse_constant=NON_FINITE.__getitem__,
            parse_int=checked_int,
            object_pairs_hook=_Pairs,
        )
        _check_json_size(pairs, name)
        lines: dict[KeyPath, int] = {}
        data = _objects(pairs, (), _KeyLines(text), lines)
    except json.JSONDecodeError as exc:
        reason = f"malformed JSON: {exc.msg} (column {exc.colno})"
        raise FileReadError(name, reason, exc.lineno, exc.colno) from None
    except RefusedValueError as exc:
        raise FileReadError(name, exc.reason, exc.line) from None
    except RecursionError:
        raise FileReadError(name, "JSON nested too deeply to be a config") from None
    return _float_tags(data), lines


NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
"""The numbers Python's ``json`` writes beyond JSON, as it reads them back."""

FLOAT_TAG = "__float__"
"""transformers 5 writes a float that is not finite as ``{"__float__": "Infinity"}``
(``PreTrainedConfig._encode_special_floats``) and reads it back as the float."""


def _float_tags(value: Any) -> Any:
    """``value`` with every ``{"__float__": NAME}`` (that key alone, NAME one of NON_FINITE's)
    read as the float it names, as transformers' ``_decode_special_floats`` reads it; nesting is
    bounded by MAX_DEPTH already."""
    if isinstance(value, dict):
        tag = value.get(FLOAT_TAG)
        if len(value) == 1 and isinstance(tag, str) and tag in NON_FINITE:
            return NON_FINITE[tag]
        return {key: _float_tags(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_float_tags(item) for item in value]
    return value


def plain_mapping(data: Mapping[Any, Any], name: str) -> dict[str, Any]:
    """A mapping given in Python (``costcalc.load({...})``) as a file's data: the same caps as a
    file's (values, depth, key length, integer digits) and plain values only (mappings with text
    keys, lists or tuples, text, numbers, booleans, None); walked without recursion, so
    a mapping that holds itself is refused by its depth."""
    root: dict[str, Any] = {}
    stack: list[tuple[Any, Any, KeyPath]] = [(data, root, ())]
    values = 0
    while stack:
        source, target, path = stack.pop()
        values += 1 + len(source)
        if len(path) > MAX_DEPTH:
            raise FileReadError(name, TOO_DEEP)
        if values > MAX_VALUES:
            raise FileReadError(name, f"holds over {MAX_VALUES:,} values; refused")
        items = source.items() if isinstance(source, Mapping) else enumerate(source)
        for key, value in items:
            if isinstance(source, Mapping):
                if not isinstance(key, str):
                    where = ".".join(path) or "the top"
                    raise FileReadError(name, f"{where}: key {key!r} is not text")
                check_key(key, name, None)
            inner = (*path, str(key))
            if isinstance(value, Mapping | list | tuple):
                copy: Any = {} if isinstance(value, Mapping) else [None] * len(value)
                stack.append((value, copy, inner))
                value = copy
            elif not _plain(value, name, inner):
                where = ".".join(inner)
                raise FileReadError(name, f"{where}: {type(value).__name__} is no config value")
            target[key] = value
    return root


def _plain(value: Any, name: str, path: KeyPath) -> bool:
    """Whether ``value`` is a plain scalar a config holds; a FileReadError for one refused. A
    float that is not finite is plain (a Hugging Face config holds them, as a file does);
    whatever reads it as a size refuses it."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_DIGITS:
        where = ".".join(path)
        raise FileReadError(name, f"{where}: an integer of over {MAX_DIGITS} digits is too long")
    return value is None or isinstance(value, str | int | float | bool)


def _line_at(text: str, index: int) -> int | None:
    return None if index < 0 else text.count("\n", 0, index) + 1


def _check_json_size(data: Any, name: str) -> None:
    """YAML's caps for a parsed JSON value: at most MAX_VALUES values (keys included), nesting
    no deeper than MAX_DEPTH, no key over MAX_KEY_CHARS; walked without recursion."""
    stack = [(data, 0)]
    values = 0
    while stack:
        value, depth = stack.pop()
        values += 1 + (len(value) if isinstance(value, _Pairs) else 0)
        if depth > MAX_DEPTH:
            raise FileReadError(name, TOO_DEEP)
        if values > MAX_VALUES:
            raise FileReadError(name, f"holds over {MAX_VALUES:,} values; refused")
        if isinstance(value, _Pairs):
            for key, item in value:
                check_key(key, name, None)
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack += [(item, depth + 1) for item in value]


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?')
"""A JSON string, and the colon that makes it a key."""


class _KeyLines:
    """The lines of a JSON text's keys in the order they are written (the decoder keeps no
    positions): every string of the text is matched in turn, so a quote inside a string is
    never taken for the start of one, and the n-th key found is the n-th key met walking the
    parsed value in order."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._keys = (m.start() for m in _JSON_STRING.finditer(text) if m.group(1))
        self._line, self._counted = 1, 0

    def next_line(self) -> int:
        """The line of the next key."""
        start = next(self._keys)
        self._line += self._text.count("\n", self._counted, start)
        self._counted = start
        return self._line


def _objects(value: Any, prefix: KeyPath, keys: _KeyLines, lines: dict[KeyPath, int]) -> Any:
    """``value`` with every object read as a dict, the line of each key put in ``lines``; a
    key given twice in one object, or holding half of a UTF-16 pair, is refused with its line.
    Nesting is bounded by MAX_DEPTH already."""
    if isinstance(value, _Pairs):
        result: dict[str, Any] = {}
        for key, item in value:
            line = keys.next_line()
            if _SURROGATE.search(key):
                reason = (
                    f"key {json.dumps(key)}{under(prefix)} is no Unicode text (a lone surrogate)"
                )
                raise RefusedValueError(reason, line)
            if key in result:
                raise RefusedValueError(duplicate_key(key, prefix, lines[(*prefix, key)]), line)
            lines[(*prefix, key)] = line
            result[key] = _objects(item, (*prefix, key), keys, lines)
        return result
    if isinstance(value, list):
        return [
            _objects(item, (*prefix, str(index)), keys, lines) for index, item in enumerate(value)
        ]
    return value


def _check_values(value: Any, name: str, lines: dict[KeyPath, int], path: KeyPath) -> None:
    """Refuse NaN and infinities (YAML's .nan, .inf; JSON's 1e999); nesting is already bounded."""
    if isinstance(value, float) and not math.isfinite(value):
        where = ".".join(path) or "value"
        raise FileReadError(
            name, f"{where}: {value} is not a number a config can hold", lines.get(path)
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _check_values(item, name, lines, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_values(item, name, lines, (*path, str(index)))


def _type_name(value: object) -> str:
    names = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
