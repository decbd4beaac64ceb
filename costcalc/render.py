"""Rendering result tables for people (Rich, Markdown) and machines (CSV, JSON).

A :class:`Grid` is a titled table of strings; every command builds grids from its result
objects and hands them here, so all commands render the same way. JSON never goes through Rich.
Whatever the content, output cannot fail on it: text is shown with control characters escaped
(:func:`costcalc.errors.shown`), never read as Rich markup, and JSON is pure ASCII.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any

from costcalc.errors import shown


class OutputFormat(StrEnum):
    """How a command prints its result."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    markdown = "markdown"
    csv = "csv"


@dataclass(frozen=True)
class Grid:
    """A titled table: a header row, body rows, and notes printed under it."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[str]]
    notes: Sequence[str] = field(default_factory=tuple)
    emphasis: frozenset[int] = frozenset()
    """Indexes of rows shown in bold (totals)."""


def to_json(data: Any) -> str:
    """Machine-clean JSON with integers kept exact; ASCII, so any terminal can take it and an
    unpaired surrogate (a file name that is not UTF-8) is written as its escape."""
    return json.dumps(data, indent=2)


def to_jsonl(records: list[Any]) -> str:
    """One compact JSON object per line, as :func:`to_json` writes each."""
    return "\n".join(json.dumps(record, separators=(",", ":")) for record in records)


def ratio_dict(value: Fraction) -> dict[str, Any]:
    """An exact ratio for JSON, the one shape every command uses: numerator and denominator in
    lowest terms, and a percentage rounded for display."""
    from costcalc.units import format_percent

    return {
        "numerator": value.numerator,
        "denominator": value.denominator,
        "percent": format_percent(value),
    }


def to_markdown(grids: Sequence[Grid]) -> str:
    """GitHub-flavoured Markdown tables."""
    parts = []
    for grid in map(_shown_grid, grids):
        lines = [f"### {grid.title}", ""]
        lines.append("| " + " | ".join(grid.columns) + " |")
        aligns = ["---"] + ["---:"] * (len(grid.columns) - 1)
        lines.append("| " + " | ".join(aligns) + " |")
        for row in grid.rows:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        lines += [""] + [f"{note}  " for note in grid.notes]
        parts.append("\n".join(lines).rstrip())
    return "\n\n".join(parts)


def to_csv(grids: Sequence[Grid]) -> str:
    """Every grid as CSV: a header row, then its rows, each led by the grid's title."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for grid in map(_shown_grid, grids):
        writer.writerow(["table", *grid.columns])
        for row in grid.rows:
            writer.writerow([grid.title, *row])
    return out.getvalue().rstrip("\n")


def print_grids(grids: Sequence[Grid]) -> None:
    """Rich tables on standard output."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    for grid in map(_shown_grid, grids):
        table = Table(title=Text(grid.title), title_justify="left", title_style="bold")
        columns = range(len(grid.columns))
        numeric = [bool(i) and _numeric([row[i] for row in grid.rows]) for i in columns]
        widths = [
            max(len(cell) for cell in [grid.columns[i], *(r[i] for r in grid.rows)])
            for i in columns
        ]
        # Never cut: numbers keep their whole width while text wraps around them; where even the
        # numbers do not fit the terminal, they fold onto the next line.
        room = sum(w + 3 for w, n in zip(widths, numeric, strict=True) if n)
        whole = room + 12 * numeric.count(False) <= console.width
        for name, is_number, widest in zip(grid.columns, numeric, widths, strict=True):
            if is_number and whole:
                table.add_column(Text(name), justify="right", no_wrap=True, min_width=widest)
            elif is_number:
                table.add_column(Text(name), justify="right", overflow="fold")
            else:
                table.add_column(Text(name), justify="left", overflow="fold")
        for index, row in enumerate(grid.rows):
            style = "bold" if index in grid.emphasis else None
            table.add_row(*map(Text, row), style=style)
        console.print(table)
        for note in grid.notes:
            console.print(Text(note))


def _shown_grid(grid: Grid) -> Grid:
    """``grid`` with every piece of text shown safely (names come from users' files)."""
    return Grid(
        shown(grid.title),
        [shown(name) for name in grid.columns],
        [[shown(cell) for cell in row] for row in grid.rows],
        [shown(note) for note in grid.notes],
        grid.emphasis,
    )


def _numeric(cells: Sequence[str]) -> bool:
    """A column of numbers (right-aligned): every cell starts with a digit, a sign or a dash."""
    return all(not cell or cell[0].isdigit() or cell[0] in "+-~" for cell in cells)
