"""Rendering result tables for people (Rich, Markdown) and machines (CSV, JSON, JSON Lines).

A :class:`Grid` is a titled table of strings; every command builds grids from its result
objects and hands them here, so all commands render the same way. Tables never cut a figure or
a name: where the terminal is too narrow, labels wrap, a wide comparison is split into several
tables, and where even one column of figures does not fit, each figure gets a line of its own.
CSV and JSON Lines are built from the JSON records (:mod:`costcalc.tidy`), never from the tables;
JSON never goes through Rich.
Whatever the content, output cannot fail on it: text is shown with control characters escaped
(:func:`costcalc.errors.shown`), never read as Rich markup, and JSON is pure ASCII.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from enum import StrEnum
from fractions import Fraction
from typing import Any, NamedTuple

from costcalc.errors import shown


class OutputFormat(StrEnum):
    """How a command prints its result."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    markdown = "markdown"
    csv = "csv"


class Grid(NamedTuple):
    """A titled table: a header row, body rows, and notes printed under it."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[str]]
    notes: Sequence[str] = ()
    emphasis: frozenset[int] = frozenset()
    """Indexes of rows shown in bold (totals)."""
    chart: bool = False
    """A chart (bars): shown in a terminal, left out of Markdown."""


def to_json(data: Any) -> str:
    """Machine-clean JSON with integers kept exact; ASCII, so any terminal can take it and an
    unpaired surrogate (a file name that is not UTF-8) is written as its escape."""
    return json.dumps(data, indent=2)


def to_jsonl(records: Sequence[Any]) -> str:
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
    """GitHub-flavoured Markdown tables; charts are left out (their figures are in the tables
    or in the JSON)."""
    parts = []
    for grid in map(_shown_grid, (grid for grid in grids if not grid.chart)):
        lines = [f"### {grid.title}", ""]
        lines.append("| " + " | ".join(grid.columns) + " |")
        aligns = ["---"] + ["---:"] * (len(grid.columns) - 1)
        lines.append("| " + " | ".join(aligns) + " |")
        for row in grid.rows:
            lines.append("| " + " | ".join(_markdown_cell(cell) for cell in row) + " |")
        lines += [""] + [f"{note}  " for note in grid.notes]
        parts.append("\n".join(lines).rstrip())
    return "\n\n".join(parts)


def _markdown_cell(cell: str) -> str:
    """A cell of a Markdown table: ``|`` escaped, and the indentation of a sub-row kept as
    ``&nbsp;`` (GitHub trims ordinary spaces at a cell's edges)."""
    text = cell.replace("|", "\\|")
    indent = len(text) - len(text.lstrip(" "))
    return "&nbsp;" * indent + text[indent:]


def to_csv(records: Sequence[dict[str, Any]]) -> str:
    """Tidy CSV: one header, then a row per model, table and quantity with the value a plain
    integer and its unit (and dtype, where one applies) in columns of their own."""
    from costcalc.tidy import COLUMNS, facts

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for fact in facts(list(records)):
        writer.writerow([shown(fact.model), *fact.row()[1:]])
    return out.getvalue().rstrip("\n")


def print_grids(grids: Sequence[Grid]) -> None:
    """Rich tables on standard output, each fitted to the terminal (:func:`column_groups`)."""
    from rich.console import Console

    console = Console()
    if console.width < MIN_WIDTH:  # COLUMNS=0 or a tiny window: figures still go whole
        console = Console(width=MIN_WIDTH)
    for grid in map(_shown_grid, grids):
        needs = _needs(grid)
        groups = column_groups(grid, console.width, needs)
        if groups is None:
            _print_vertical(console, grid)
        else:
            for number, group in enumerate(groups, 1):
                part = f" (part {number} of {len(groups)})" if len(groups) > 1 else ""
                _print_table(console, grid, needs, group, part)
        for note in grid.notes:
            _print_words(console, note)


def column_groups(
    grid: Grid, width: int, needs: Sequence[int] | None = None
) -> list[list[int]] | None:
    """The value columns (1, 2, ...) in groups that each fit ``width`` beside the label column,
    figures and names whole (``needs``: :func:`_needs` of the grid, when known); None when even
    one column of figures does not fit."""
    needs = _needs(grid) if needs is None else needs
    base = 1 + needs[0] + _RULE
    groups: list[list[int]] = [[]]
    used = base
    for index in range(1, len(grid.columns)):
        need = needs[index] + _RULE
        if base + need > width:
            return None
        if used + need > width:
            groups.append([])
            used = base
        groups[-1].append(index)
        used += need
    return groups


MIN_WIDTH = 20
"""The narrowest terminal tables are fitted to (``COLUMNS=0`` would print nothing): a figure
wider than it is still printed whole, on a line of its own."""

_RULE = 3
"""What a column adds to a table's width besides its text: one space each side and a rule."""


def _needs(grid: Grid) -> list[int]:
    """Each column's narrowest width: a figure column its widest cell or name, a text column its
    longest word (so that neither is ever cut)."""
    needs = []
    for index, name in enumerate(grid.columns):
        cells = [name, *(row[index] for row in grid.rows)]
        if index and _numeric(cells[1:]):
            needs.append(max(map(len, cells)))
        else:
            needs.append(max(len(word) for cell in cells for word in [*cell.split(), ""]))
    return needs


def _print_table(
    console: Any, grid: Grid, needs: Sequence[int], group: list[int], part: str
) -> None:
    """Columns 0 and ``group`` of ``grid`` as one Rich table: figure columns and columns of
    single words (names, a chart's bars) keep their whole width, text wraps in the width left
    (:func:`_text_widths`), so that no column is cut at the terminal's edge."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(grid.title + part), title_justify="left", title_style="bold")
    columns = [0, *group]
    cells = {i: [grid.columns[i], *(row[i] for row in grid.rows)] for i in columns}
    figures = {i for i in group if _numeric(cells[i][1:])}
    wrapping = [i for i in columns if i not in figures and any(" " in c for c in cells[i])]
    widest = {i: max(map(len, cells[i])) for i in columns}
    room = console.width - 1 - _RULE * len(columns)
    room -= sum(widest[i] for i in columns if i not in wrapping)
    widths = _text_widths([needs[i] for i in wrapping], [widest[i] for i in wrapping], room)
    width = dict(zip(wrapping, widths, strict=True))
    for index in columns:
        name = Text(grid.columns[index])
        if index in width:
            table.add_column(name, overflow="fold", min_width=needs[index], max_width=width[index])
        elif index in figures:
            table.add_column(name, justify="right", no_wrap=True, min_width=needs[index])
        else:
            table.add_column(name, justify="left", no_wrap=True, min_width=needs[index])
    for number, row in enumerate(grid.rows):
        style = "bold" if number in grid.emphasis else None
        table.add_row(*(_cell(row[index], index) for index in columns), style=style)
    console.print(table)


def _cell(text: str, index: int) -> Any:
    """A cell's text: a figure right-aligned, also in a column that holds words too."""
    from rich.text import Text

    figure = index > 0 and bool(text) and _numeric([text]) and " " not in text.strip()
    return Text(text, justify="right" if figure else None)


def _text_widths(needs: list[int], naturals: list[int], room: int) -> list[int]:
    """Widths of the text columns that share ``room`` cells: each its natural width, capped at
    the largest level c for which the sum fits, never below its longest word (min(natural,
    max(need, c)))."""

    def total(level: int) -> int:
        return sum(min(n, max(need, level)) for need, n in zip(needs, naturals, strict=True))

    level = max(naturals, default=0)
    while level > 0 and total(level) > room:
        level -= 1
    return [min(n, max(need, level)) for need, n in zip(needs, naturals, strict=True)]


def _print_vertical(console: Any, grid: Grid) -> None:
    """``grid`` one figure per line, for a terminal narrower than a column of its figures:
    under each column's name, every row's label and value, the value on a line of its own when
    both do not fit on one."""
    from rich.text import Text

    _print_words(console, grid.title, "bold")
    for index in range(1, len(grid.columns)):
        if grid.columns[index]:
            _print_words(console, grid.columns[index], "underline")
        for number, row in enumerate(grid.rows):
            style = "bold" if number in grid.emphasis else ""
            line = f"{row[0]}  {row[index]}".strip()
            if len(line) <= console.width:
                console.print(Text(line, style=style))
            else:  # a label wider than the terminal wraps at its words; a figure never does
                _print_words(console, row[0], style)
                console.print(Text("  " + row[index], style=style), soft_wrap=True)


def _print_words(console: Any, text: str, style: str = "") -> None:
    """``text`` wrapped at the terminal's width between words; where a word is wider than it
    (a long figure on a narrow terminal), that word is kept whole on a line of its own."""
    import textwrap

    from rich.text import Text

    if max(map(len, text.split()), default=0) <= console.width:
        console.print(Text(text, style=style))
        return
    lines = textwrap.wrap(text, console.width, break_long_words=False, break_on_hyphens=False)
    console.print(Text("\n".join(lines), style=style), soft_wrap=True)


def _shown_grid(grid: Grid) -> Grid:
    """``grid`` with every piece of text shown safely (names come from users' files)."""
    return Grid(
        shown(grid.title),
        [shown(name) for name in grid.columns],
        [[shown(cell) for cell in row] for row in grid.rows],
        [shown(note) for note in grid.notes],
        grid.emphasis,
        grid.chart,
    )


def _numeric(cells: Sequence[str]) -> bool:
    """A column of numbers (right-aligned): every cell starts with a digit, a sign or a dash."""
    return all(not cell or cell[0].isdigit() or cell[0] in "+-~" for cell in cells)
