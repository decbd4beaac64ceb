"""Reading config files safely: YAML or JSON into a mapping, with the line of every key.

Whatever is wrong with a file (missing, a directory, too large, binary, not UTF-8, malformed,
several documents, duplicate keys, tags that would build Python objects, NaN, nesting too deep)
becomes one :class:`FileReadError` naming the file and, where known, the line.
"""

from __future__ import annotations

import json
import math
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

KeyPath = tuple[str, ...]

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
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {_type_name(data)}"
        raise FileReadError(name, f"expected a mapping of keys to values at the top, found {kind}")
    _check_values(data, name, lines, ())
    return Document(name, data, lines)


def read_text(path: str | Path) -> str:
    """The file's text, refusing what is missing, not a file, too large, binary or not UTF-8."""
    name = str(path)
    p = Path(path)
    try:
        if not p.exists():
            raise FileReadError(name, "no such file")
        if p.is_dir():
            raise FileReadError(name, "is a directory, not a config file")
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise FileReadError(
                name, f"file is {size:,} bytes; a config over {MAX_FILE_BYTES:,} is refused"
            )
        with p.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise FileReadError(name, f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise FileReadError(name, f"file is over {MAX_FILE_BYTES:,} bytes; refused")
    if b"\x00" in raw:
        raise FileReadError(name, "binary file (contains NUL bytes), not a text config")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise FileReadError(name, f"not UTF-8 text (byte {exc.start})", line) from None


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe YAML loading that also refuses duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Hashable, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if isinstance(key, Hashable) and key in seen:
                raise _DuplicateKeyError(key, line, seen[key])
            if isinstance(key, Hashable):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


class _DuplicateKeyError(Exception):
    def __init__(self, key: object, line: int | None, first: int | None) -> None:
        self.key, self.line, self.first = key, line, first


def _parse_yaml(text: str, name: str) -> tuple[Any, dict[KeyPath, int]]:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines = dict(_key_lines(node, (), set()))
        return loader.construct_document(node), lines
    except _DuplicateKeyError as exc:
        raise FileReadError(
            name, f"duplicate key '{exc.key}' (first on line {exc.first})", exc.line
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "malformed YAML"
        if "expected a single document" in str(exc.context):
            problem = "several YAML documents in one file; a config is one document"
        elif "could not determine a constructor" in problem:
            problem = f"YAML tag refused: {problem.split('tag ')[-1]} (only plain data is read)"
        raise FileReadError(name, f"malformed YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise FileReadError(name, f"malformed YAML: {exc}") from None
    except (RecursionError, MemoryError):
        raise FileReadError(name, "YAML nested too deeply or too large to be a config") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise FileReadError(name, f"unreadable value: {exc}") from None
    finally:
        loader.dispose()


def _key_lines(node: yaml.Node, prefix: KeyPath, seen: set[int]) -> Iterator[tuple[KeyPath, int]]:
    """(key path, line) for every mapping key below ``node``; each node visited once (aliases)."""
    if id(node) in seen or len(prefix) > MAX_DEPTH:
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

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise _DuplicateKeyError(key, _json_key_line(text, key), None)
            result[key] = value
        return result

    try:
        data = json.loads(text, parse_constant=refuse_constant, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise FileReadError(
            name, f"malformed JSON: {exc.msg} (column {exc.colno})", exc.lineno
        ) from None
    except _DuplicateKeyError as exc:
        raise FileReadError(name, f"duplicate key '{exc.key}'", exc.line) from None
    except _BadConstantError as exc:
        raise FileReadError(name, f"{exc.args[0]} is not a number a config can hold") from None
    except RecursionError:
        raise FileReadError(name, "JSON nested too deeply to be a config") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise FileReadError(name, f"unreadable value: {exc}") from None
    lines: dict[KeyPath, int] = {}
    if isinstance(data, dict):
        for key in data:
            line = _json_key_line(text, key)
            if line is not None:
                lines[(key,)] = line
    return data, lines


class _BadConstantError(Exception):
    pass


def _json_key_line(text: str, key: str) -> int | None:
    """Line of the first ``"key":`` in a JSON text (the decoder keeps no positions)."""
    needle = json.dumps(key)
    index = text.find(needle)
    return None if index < 0 else text.count("\n", 0, index) + 1


def _check_values(value: Any, name: str, lines: dict[KeyPath, int], path: KeyPath) -> None:
    """Refuse NaN and infinities (YAML's .nan, .inf) and nesting deeper than MAX_DEPTH."""
    if len(path) > MAX_DEPTH:
        raise FileReadError(name, "nested too deeply to be a config")
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
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), type(value).__name__
    )
