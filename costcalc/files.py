"""Reading config files safely: YAML or JSON into a mapping, with the line of every key.

Whatever is wrong with a file (missing, a directory, too large, binary, not UTF-8, malformed,
several documents, duplicate keys, tags that would build Python objects, NaN, nesting too deep)
becomes one :class:`FileReadError` naming the file and, where known, the line.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from costcalc.errors import FileReadError

MAX_FILE_BYTES = 1024 * 1024
"""A model config is a few hundred bytes; anything over 1 MiB is refused before it is read."""

MAX_DEPTH = 64
"""Deeper nesting than this is no model config."""

MAX_VALUES = 10_000
"""Most values a YAML file may hold once its aliases are expanded (a guard against alias bombs)."""

MAX_DIGITS = 100
"""Longest integer a config may spell out; Python refuses to convert past 4,300 digits anyway."""

KeyPath = tuple[str, ...]

_EMPTY = object()
"""What a file without any content parses to (distinct from an explicit ``null``)."""

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def read_document(path: str | Path) -> Document:
    """Read ``path`` as JSON (``.json``) or YAML (anything else) into a :class:`Document`."""
    return parse_document(
        read_text(path), str(path), json_text=Path(path).suffix.lower() == ".json"
    )


def parse_document(text: str, name: str, json_text: bool = False) -> Document:
    """Parse ``text`` (JSON or YAML, named ``name`` in errors) into a :class:`Document`."""
    data, lines = _parse_json(text, name) if json_text else _parse_yaml(text, name)
    if data is _EMPTY:
        raise FileReadError(name, "empty file; expected a mapping of keys to values")
    if not isinstance(data, dict):
        raise FileReadError(
            name, f"expected a mapping of keys to values at the top, found {_type_name(data)}"
        )
    _check_values(data, name, lines, ())
    return Document(name, data, lines)


def read_text(path: str | Path) -> str:
    """The file's text, refusing what is missing, not a file, too large, binary or not UTF-8.

    The size is judged from ``stat`` before anything is read, and at most one byte past the
    limit is ever read; a FIFO or a device is refused without opening it.
    """
    name = str(path)
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise FileReadError(name, "is a directory, not a config file")
        if not stat.S_ISREG(info.st_mode):
            raise FileReadError(name, "not a regular file (a device, FIFO or socket)")
        if info.st_size > MAX_FILE_BYTES:
            raise FileReadError(
                name, f"file is {info.st_size:,} bytes; a config over {MAX_FILE_BYTES:,} is refused"
            )
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileReadError:
        raise
    except OSError as exc:
        raise FileReadError(name, _os_reason(exc)) from None
    if len(raw) > MAX_FILE_BYTES:
        raise FileReadError(name, f"file is over {MAX_FILE_BYTES:,} bytes; refused")
    if b"\x00" in raw:
        raise FileReadError(name, "binary file (contains NUL bytes), not a text config")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise FileReadError(name, f"not UTF-8 text (byte {exc.start})", line) from None


def _os_reason(exc: OSError) -> str:
    """What went wrong opening a file, without repeating its name."""
    reasons = {
        errno.ENOENT: "no such file",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOTDIR: "a part of the path is not a directory",
        errno.ELOOP: "too many levels of symbolic links",
        errno.ENAMETOOLONG: "file name too long",
    }
    return reasons.get(exc.errno or 0) or f"cannot read: {exc.strerror or exc}"


_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe YAML loading that also refuses duplicate keys and integers too long to convert."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Hashable, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:  # `<<: *base` may be overridden by the keys after it
                continue
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if isinstance(key, Hashable) and key in seen:
                raise _DuplicateKeyError(key, line, seen[key])
            if isinstance(key, Hashable):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > MAX_DIGITS:
            raise _TooLongError(len(node.value), node.start_mark.line + 1)
        return super().construct_yaml_int(node)  # type: ignore[no-any-return]


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


class _DuplicateKeyError(Exception):
    def __init__(self, key: object, line: int | None, first: int | None) -> None:
        self.key, self.line, self.first = key, line, first


class _TooLongError(Exception):
    def __init__(self, digits: int, line: int | None) -> None:
        self.digits, self.line = digits, line

    def reason(self) -> str:
        return f"an integer of {self.digits:,} digits is too long for a config value"


def _parse_yaml(text: str, name: str) -> tuple[Any, dict[KeyPath, int]]:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return _EMPTY, {}
        _check_size(node, name)
        lines = dict(_key_lines(node, (), set()))
        return loader.construct_document(node), lines
    except _DuplicateKeyError as exc:
        raise FileReadError(
            name, f"duplicate key '{exc.key}' (first on line {exc.first})", exc.line
        ) from None
    except _TooLongError as exc:
        raise FileReadError(name, exc.reason(), exc.line) from None
    except yaml.MarkedYAMLError as exc:
        raise _yaml_error(name, exc) from None
    except yaml.YAMLError as exc:
        raise FileReadError(name, f"malformed YAML: {exc}") from None
    except (RecursionError, MemoryError):
        raise FileReadError(name, "YAML nested too deeply or too large to be a config") from None
    except ValueError as exc:  # a value PyYAML's constructors cannot convert
        raise FileReadError(name, f"unreadable value: {exc}") from None
    finally:
        loader.dispose()


def _yaml_error(name: str, exc: yaml.MarkedYAMLError) -> FileReadError:
    """One line for a YAML syntax error: the problem, its line and column."""
    mark = exc.problem_mark or exc.context_mark
    problem = f"malformed YAML: {exc.problem or exc.context}"
    if "expected a single document" in str(exc.context):
        problem = "several YAML documents in one file; a config is one document"
    elif "could not determine a constructor" in problem:
        tag = problem.split("tag ")[-1].replace("tag:yaml.org,2002:", "!!")
        problem = f"YAML tag {tag} refused: only plain data is read"
    if mark is None:
        return FileReadError(name, problem)
    return FileReadError(name, f"{problem} (column {mark.column + 1})", mark.line + 1)


def _check_size(root: yaml.Node, name: str) -> None:
    """Refuse a node tree nested deeper than MAX_DEPTH or holding more than MAX_VALUES values
    once aliases are expanded; each node is measured once, so an alias bomb costs nothing."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise FileReadError(name, f"nested more than {MAX_DEPTH} levels deep; refused")
        known = sizes.get(id(node))
        if known is not None:
            return known
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        total = 1 + sum(size(child, depth + 1) for child in children)
        if total > MAX_VALUES:
            raise FileReadError(
                name, f"holds over {MAX_VALUES:,} values once its aliases are expanded; refused"
            )
        sizes[id(node)] = total
        return total

    size(root, 0)


def _key_lines(node: yaml.Node, prefix: KeyPath, seen: set[int]) -> Iterator[tuple[KeyPath, int]]:
    """(key path, line) for every mapping key below ``node``; each node visited once (aliases)."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                path = (*prefix, str(key_node.value))
                yield path, key_node.start_mark.line + 1
                yield from _key_lines(value_node, path, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _key_lines(item, (*prefix, str(index)), seen)


def _parse_json(text: str, name: str) -> tuple[Any, dict[KeyPath, int]]:
    def refuse_constant(constant: str) -> None:
        raise _BadConstantError(constant)

    def checked_int(digits: str) -> int:
        if len(digits) > MAX_DIGITS:
            raise _TooLongError(len(digits), _line_at(text, text.find(digits)))
        return int(digits)

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise _DuplicateKeyError(key, None, None)
            result[key] = value
        return result

    if not text.strip():
        return _EMPTY, {}
    try:
        data = json.loads(
            text,
            parse_constant=refuse_constant,
            parse_int=checked_int,
            object_pairs_hook=no_duplicates,
        )
    except json.JSONDecodeError as exc:
        raise FileReadError(
            name, f"malformed JSON: {exc.msg} (column {exc.colno})", exc.lineno
        ) from None
    except _DuplicateKeyError as exc:
        needle = json.dumps(exc.key)
        second = text.find(needle, text.find(needle) + 1)
        raise FileReadError(
            name, f"duplicate key '{exc.key}'", _line_at(text, second) if second >= 0 else None
        ) from None
    except _TooLongError as exc:
        raise FileReadError(name, exc.reason(), exc.line) from None
    except _BadConstantError as exc:
        constant = exc.args[0]
        raise FileReadError(
            name,
            f"{constant} is not a number a config can hold",
            _line_at(text, text.find(constant)),
        ) from None
    except RecursionError:
        raise FileReadError(name, "JSON nested too deeply to be a config") from None
    lines: dict[KeyPath, int] = {}
    _json_key_lines(text, data, (), 0, lines)
    return data, lines


class _BadConstantError(Exception):
    pass


def _line_at(text: str, index: int) -> int | None:
    return None if index < 0 else text.count("\n", 0, index) + 1


def _json_key_lines(
    text: str, value: Any, prefix: KeyPath, start: int, lines: dict[KeyPath, int]
) -> int:
    """Record the line of every key of a parsed JSON value (the decoder keeps no positions).

    Keys appear in the text in the order the parser met them, so each is searched for as
    ``"key":`` after the previous one; returns where the search for the next key starts.
    """
    if len(prefix) > MAX_DEPTH:
        return start
    if isinstance(value, dict):
        for key, item in value.items():
            found = re.compile(re.escape(json.dumps(key)) + r"\s*:").search(text, start)
            if found is not None:
                lines[(*prefix, key)] = _line_at(text, found.start()) or 1
                start = found.end()
            start = _json_key_lines(text, item, (*prefix, key), start, lines)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            start = _json_key_lines(text, item, (*prefix, str(index)), start, lines)
    return start


def _check_values(value: Any, name: str, lines: dict[KeyPath, int], path: KeyPath) -> None:
    """Refuse NaN and infinities (YAML's .nan, .inf) and nesting deeper than MAX_DEPTH."""
    if len(path) > MAX_DEPTH:
        raise FileReadError(name, f"nested more than {MAX_DEPTH} levels deep; refused")
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
