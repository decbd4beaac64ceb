"""What every command shares: the output format and error reporting."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from costcalc.render import Grid

FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
]


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn costcalc's errors into one clear message on stderr and a non-zero exit."""
    from costcalc.errors import CostcalcError

    try:
        yield
    except CostcalcError as exc:
        fail(str(exc), exc.exit_code)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` to stderr, each of its lines shown safely, and exit with
    ``code``."""
    from costcalc.errors import shown

    lines = "\n".join(map(shown, message.split("\n")))
    sys.stderr.write(f"error: {lines}\n")
    raise typer.Exit(code)


def emit(fmt: OutputFormat, data: Any, grids: Sequence[Grid]) -> None:
    """Print ``data`` as JSON (JSON Lines: a line per record, one alone included) or ``grids``
    as a table, Markdown or CSV."""
    from costcalc import render

    if fmt is OutputFormat.json:
        typer.echo(render.to_json(data))
    elif fmt is OutputFormat.jsonl:
        typer.echo(render.to_jsonl(data if isinstance(data, list) else [data]))
    elif fmt is OutputFormat.markdown:
        typer.echo(render.to_markdown(grids))
    elif fmt is OutputFormat.csv:
        typer.echo(render.to_csv(grids))
    else:
        render.print_grids(grids)
