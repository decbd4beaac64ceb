"""docs/architecture.md's floors hold: every module of the package is on one floor, and every
import (module level, in functions, under TYPE_CHECKING) points at its own floor or below."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT
from tests.test_import_graph import Graph, package_graph

DOC = ROOT / "docs" / "architecture.md"
ROW = re.compile(r"^\| (\d+) \| [^|]+ \| (.+) \|$", re.M)
THIRD_PARTY_UI = ("typer", "rich")


def floors(text: str) -> dict[str, int]:
    """Each entry of the floors table (``errors``, ``anatomy/``, ``engines/__init__``) -> its
    floor."""
    found: dict[str, int] = {}
    for floor, cell in ROW.findall(text):
        for entry in re.findall(r"`([^`]+)`", cell):
            assert entry not in found, f"{entry} is on two floors"
            found[entry] = int(floor)
    return found


def floor_of(module: str, table: dict[str, int]) -> int | None:
    """The floor of ``costcalc.x.y``: its own entry (``x/y``, ``x`` for a top module, ``x/__init__``
    for a package's ``__init__``), else its folder's (``x/``)."""
    parts = module.split(".")[1:]
    if not parts:
        return table.get("__init__")
    own = "/".join(parts)
    for entry in (own, f"{own}/__init__"):
        if entry in table:
            return table[entry]
    for end in range(len(parts) - 1, 0, -1):
        folder = "/".join(parts[:end]) + "/"
        if folder in table:
            return table[folder]
    return table.get(f"{own}/") if len(parts) == 1 else None


def downward(graph: Graph, table: dict[str, int]) -> list[str]:
    """Every module without a floor, and every import that points up a floor, in words."""
    problems = [
        f"{m} is on no floor (add it to the table)"
        for m in sorted(graph)
        if floor_of(m, table) is None
    ]
    for module, targets in sorted(graph.items()):
        here = floor_of(module, table)
        for target, line in sorted(targets.items()):
            there = floor_of(target, table)
            if here is not None and there is not None and there > here:
                problems.append(
                    f"{module} (floor {here}, line {line}) imports {target} (floor {there})"
                )
    return problems


def test_every_import_points_down_the_floors() -> None:
    table = floors(DOC.read_text(encoding="utf-8"))
    assert len(table) > 40
    problems = downward(package_graph(ROOT, "costcalc"), table)
    assert not problems, "docs/architecture.md's floors are broken:\n" + "\n".join(problems)


def test_an_upward_import_and_a_module_without_floor_are_named() -> None:
    table = {"low": 1, "pkg/": 2, "pkg/__init__": 1, "high": 3}
    graph = {
        "costcalc.low": {"costcalc.high": 7},
        "costcalc.pkg": {"costcalc.low": 1},
        "costcalc.pkg.part": {"costcalc.pkg": 2},
        "costcalc.high": {"costcalc.pkg.part": 4},
        "costcalc.stray": {},
    }
    assert downward(graph, table) == [
        "costcalc.stray is on no floor (add it to the table)",
        "costcalc.low (floor 1, line 7) imports costcalc.high (floor 3)",
    ]


def test_only_the_command_line_and_the_renderer_import_typer_and_rich() -> None:
    for path in sorted((ROOT / "costcalc").rglob("*.py")):
        relative = path.relative_to(ROOT / "costcalc").as_posix()
        if relative.startswith("cli/") or relative == "render.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            assert not [n for n in names if n.split(".")[0] in THIRD_PARTY_UI], relative
