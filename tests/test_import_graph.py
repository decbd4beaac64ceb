"""No import circles among costcalc's modules.

Every module of the package is parsed (never imported): each ``import`` and ``from ... import``
anywhere in it (module level, inside functions, under ``if TYPE_CHECKING:``) is an arrow to the
most specific costcalc module it names, relative imports resolved against the module's package.
``from costcalc.anatomy import tensor`` points at ``costcalc.anatomy.tensor`` where that is a
module, ``from costcalc.units import DTYPES`` at ``costcalc.units``. Imports whose target is
computed at run time (``importlib.import_module(f"...{name}")``) cannot be read and are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from itertools import pairwise
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "costcalc"

Graph = dict[str, dict[str, int]]
"""module -> {imported module: line of its first import}."""


def module_name(path: Path, root: Path) -> str:
    """``root/costcalc/anatomy/tensor.py`` -> ``costcalc.anatomy.tensor``; a package's
    ``__init__.py`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a ``from`` import of ``level`` dots names, as Python resolves it."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _target(name: str, modules: set[str]) -> str | None:
    """The longest costcalc module that is ``name`` or a package above it."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def imports(module: str, is_package: bool, source: str, modules: set[str]) -> dict[str, int]:
    """The costcalc modules ``source`` imports anywhere in its body, each with its first line."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        named: list[str] = []
        if isinstance(node, ast.Import):
            named = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.level, node.module)
            named = [f"{base}.{alias.name}" for alias in node.names] or [base]
        for name in named:
            target = _target(name, modules)
            if target is not None and target != module:
                found[target] = min(found.get(target, node.lineno), node.lineno)
    return found


def package_graph(root: Path, package: str) -> Graph:
    """The import arrows among every module under ``root/package``."""
    paths = sorted((root / package).rglob("*.py"))
    modules = {module_name(path, root) for path in paths}
    return {
        module_name(path, root): imports(
            module_name(path, root),
            path.name == "__init__.py",
            path.read_text(encoding="utf-8"),
            modules,
        )
        for path in paths
    }


def cycles(graph: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """One circle through each strongly connected group of modules (Tarjan's algorithm, without
    recursion), as the modules in import order with the first repeated at the end."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    return [_circle(graph, group) for group in groups]


def _circle(graph: Mapping[str, Mapping[str, int]], group: set[str]) -> list[str]:
    """A shortest circle from the group's first module back to itself, inside the group."""
    first = min(group)
    paths = {first: [first]}
    frontier = [first]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child == first:
                    return [*paths[node], first]
                if child in group and child not in paths:
                    paths[child] = [*paths[node], child]
                    following.append(child)
        frontier = following
    raise AssertionError(f"{sorted(group)} is no circle")


def describe(graph: Mapping[str, Mapping[str, int]], circle: list[str]) -> str:
    """``a (line 3) -> b (line 9) -> a``: each module with the line of its import of the next."""
    steps = [f"{a} (line {graph[a][b]})" for a, b in pairwise(circle)]
    return " -> ".join([*steps, circle[-1]])


def test_the_package_has_no_import_circle() -> None:
    graph = package_graph(ROOT, "costcalc")
    found = [describe(graph, circle) for circle in cycles(graph)]
    assert not found, "import circles:\n" + "\n".join(found)


def test_the_graph_reads_the_imports_it_must() -> None:
    """Module-level, function-level, TYPE_CHECKING and relative imports are all arrows."""
    graph = package_graph(ROOT, "costcalc")
    assert len(graph) > 100
    assert "costcalc.units" in graph["costcalc.weight_format"]
    assert "costcalc.gguf_mix" in graph["costcalc.quant"]  # inside format_bytes
    assert "costcalc.anatomy.tensor" in graph["costcalc.tensors"]
    assert "costcalc.quant" not in graph["costcalc.units"]


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_function_level_circle_is_found_and_named(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low.py": "import os\n\n\ndef f():\n    from pkg.high import g\n",
            "pkg/high.py": "from pkg.low import f\n",
            "pkg/leaf.py": "from pkg import low\n",
        },
    )
    graph = package_graph(tmp_path, "pkg")
    assert graph["pkg.leaf"] == {"pkg.low": 1}
    assert cycles(graph) == [["pkg.high", "pkg.low", "pkg.high"]]
    assert describe(graph, cycles(graph)[0]) == "pkg.high (line 1) -> pkg.low (line 5) -> pkg.high"


def test_relative_and_type_checking_imports_close_circles(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from . import a\n",
            "pkg/sub/a.py": "from ..top import x\n",
            "pkg/top.py": (
                "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .sub import a\n"
            ),
        },
    )
    graph = package_graph(tmp_path, "pkg")
    assert graph["pkg.sub"] == {"pkg.sub.a": 1}
    assert graph["pkg.sub.a"] == {"pkg.top": 1}
    assert cycles(graph) == [["pkg.sub.a", "pkg.top", "pkg.sub.a"]]


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b": 1}, "b": {"c": 1}, "c": {}}, []),
        ({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}, [["a", "b", "c", "a"]]),
        (
            {"a": {"b": 1}, "b": {"a": 1}, "c": {"d": 1}, "d": {"c": 1}},
            [["a", "b", "a"], ["c", "d", "c"]],
        ),
    ],
)
def test_cycles_finds_one_circle_per_group(
    graph: dict[str, dict[str, int]], expected: list[list[str]]
) -> None:
    assert sorted(cycles(graph)) == expected
