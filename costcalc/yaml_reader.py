"""Reading YAML safely: plain data only, YAML 1.2's booleans and floats, the line of every key.

Imported only when a YAML file is read (a preset, a costcalc config, a nanoGPT config), so a
JSON file or a mapping given in Python never pays for PyYAML. Duplicate keys, keys that are no
strings (``true:``, ``1:``), integers not in plain decimal or too long, tags that would build
Python objects and a tagged value its tag cannot read are refused, each with its line; the caps
of :mod:`costcalc.file_limits` hold once aliases are expanded, measured on the node tree before
anything is built.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

from costcalc import file_limits as limits
from costcalc.errors import FileReadError
from costcalc.units import MAX_DIGITS

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_MERGE_TAG = "tag:yaml.org,2002:merge"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)")
"""YAML 1.1's decimal integers: the only form a costcalc integer may take."""


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe YAML loading that also refuses integers too long to convert or not in plain
    decimal, and turns any tag constructor's failure into a refusal of that value (keys are
    judged before, by :func:`_key_lines`)."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (limits.RefusedValueError, yaml.YAMLError, RecursionError, MemoryError):
            raise
        except Exception:  # PyYAML's constructors fail on bad text in any way (IndexError, ...)
            reason = f"{_shown_node(node)} cannot be read as {_tag(node)}"
            raise _refused(reason, node) from None

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        if len(text) > MAX_DIGITS:
            raise _refused(limits.too_long(len(text)), node)
        if _DECIMAL.fullmatch(text):
            return int(text.replace("_", ""))
        read = super().construct_yaml_int(node)  # a YAML 1.1 form, or a failure to read it
        raise _refused(
            f"'{text}' is read as {_int_form(text)} {read} by YAML 1.1; "
            "costcalc integers are plain decimal",
            node,
        )

    def construct_yaml_bool(self, node: yaml.ScalarNode) -> bool:
        text = str(self.construct_scalar(node)).lower()
        if text not in ("true", "false"):  # `!!bool yes`: no boolean in YAML 1.2
            raise ValueError(text)
        return text == "true"


_NOT_PLAIN = {
    f"tag:yaml.org,2002:{kind}" for kind in ("binary", "timestamp", "set", "omap", "pairs")
}
"""YAML 1.1's types that JSON has no value for (bytes, dates, sets, ordered pairs)."""

# YAML 1.2's booleans: `yes`, `no`, `on` and `off` are text, as editors and validators read them;
# so is a date (`2001-12-14`), which YAML 1.2 has no type for.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_BOOL_TAG, *_NOT_PLAIN)]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
# Plain data only, as a JSON file holds it: `!!binary`, `!!timestamp`, `!!set`, `!!omap` and
# `!!pairs` are refused as any other tag is (bytes given as a name would be read as its text).
_Loader.yaml_constructors = {
    tag: construct
    for tag, construct in _BaseLoader.yaml_constructors.items()
    if tag not in _NOT_PLAIN
}
_Loader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
# YAML 1.2's floats with an exponent that YAML 1.1 reads as text (`1e12`, `3.0e7`): numbers, as
# editors and validators read them, so a file means the same to costcalc and to its schema.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor(_BOOL_TAG, _Loader.construct_yaml_bool)


def _refused(reason: str, node: yaml.Node) -> limits.RefusedValueError:
    """A refusal of the value at ``node``, with its line and column."""
    return limits.RefusedValueError(reason, node.start_mark.line + 1, node.start_mark.column + 1)


def _int_form(text: str) -> str:
    """Which YAML 1.1 integer form ``text`` (not plain decimal) is in."""
    digits = text.lstrip("+-")
    if ":" in digits:
        return "base-60"
    return {"0b": "binary", "0x": "hexadecimal"}.get(digits[:2], "octal")


def _tag(node: yaml.Node) -> str:
    return str(node.tag).replace("tag:yaml.org,2002:", "!!")


def _shown_node(node: yaml.Node) -> str:
    """A node as a message shows it: a scalar's text (cut short), else its kind."""
    if isinstance(node, yaml.ScalarNode):
        text = str(node.value)
        return repr(text if len(text) <= 40 else text[:40] + "...")
    return "a mapping" if isinstance(node, yaml.MappingNode) else "a sequence"


def parse_yaml(text: str, name: str) -> tuple[Any, dict[limits.KeyPath, int]]:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return limits.EMPTY, {}
        _check_size(node, name)
        lines = dict(_key_lines(node, (), set()))
        return loader.construct_object(node, deep=True), lines
    except limits.RefusedValueError as exc:
        raise FileReadError(name, exc.reason, exc.line, exc.column) from None
    except yaml.MarkedYAMLError as exc:
        raise _yaml_error(name, exc) from None
    except yaml.YAMLError as exc:
        raise FileReadError(name, f"malformed YAML: {exc}") from None
    except (RecursionError, MemoryError):
        raise FileReadError(name, "YAML nested too deeply or too large to be a config") from None
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
    column = mark.column + 1
    return FileReadError(name, f"{problem} (column {column})", mark.line + 1, column)


def _check_size(root: yaml.Node, name: str) -> None:
    """Refuse a node tree nested deeper than MAX_DEPTH, holding more than MAX_VALUES values
    once aliases are expanded, or with a key over MAX_KEY_CHARS; each node is measured once,
    so an alias bomb costs nothing."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, depth: int) -> int:
        if depth > limits.MAX_DEPTH:
            raise FileReadError(name, limits.TOO_DEEP)
        known = sizes.get(id(node))
        if known is not None:
            return known
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode):
                    limits.check_key(str(key.value), name, key.start_mark.line + 1)
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        total = 1 + sum(size(child, depth + 1) for child in children)
        if total > limits.MAX_VALUES:
            raise FileReadError(name, _TOO_MANY)
        sizes[id(node)] = total
        return total

    size(root, 0)


_TOO_MANY = f"holds over {limits.MAX_VALUES:,} values once its aliases are expanded; refused"


def _key_lines(
    node: yaml.Node, prefix: limits.KeyPath, seen: set[int]
) -> Iterator[tuple[limits.KeyPath, int]]:
    """(key path, line) for every mapping key below ``node``; each node visited once (aliases).

    A key given twice in one mapping is refused (``<<: *base`` is no key: the keys after it
    override the merged ones), and so is a key YAML reads as no string (``true``, ``1``,
    ``1e3``, ``~``): a JSON file, whose keys are all strings, could not hold it, and a validator
    would name it by some text of its value (``True`` as ``1``) that no line of the file shows.
    """
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # a mapping or a list as a key is refused when the mapping is built
            key, line = str(key_node.value), key_node.start_mark.line + 1
            if key_node.tag != _MERGE_TAG:
                _check_key_is_text(key_node, prefix)
                if key in first:
                    raise _refused(limits.duplicate_key(key, prefix, first[key]), key_node)
                first[key] = line
            yield (*prefix, key), line
            yield from _key_lines(value_node, (*prefix, key), seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _key_lines(item, (*prefix, str(index)), seen)


_NOT_TEXT = {
    _BOOL_TAG: "a boolean",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:null": "null (no value)",
}
"""The scalar types a key may be read as besides a string, as a message names them."""


def _check_key_is_text(key: yaml.ScalarNode, prefix: limits.KeyPath) -> None:
    """Refuse a key YAML reads as a boolean, a number or null (a tag it cannot read is refused
    when the mapping is built)."""
    kind = _NOT_TEXT.get(key.tag)
    if kind is None:
        return
    text = str(key.value) or "~"  # a key left empty (`: 1`) is null
    raise _refused(
        f"key {text}{limits.under(prefix)} reads as {kind} in YAML, not as a string: a "
        f"config's keys are names (write '{text}' in quotes if that name is meant)",
        key,
    )
