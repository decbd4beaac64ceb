"""The ``costcalc`` command: registers the subcommands; each lives in a module of its own.

Exit codes: 0 success; 1 invalid model or input (a message on stderr, never a traceback), or
findings of `costcalc check`;
2 wrong usage (unknown option, malformed value).
"""

from __future__ import annotations

from typing import Annotated

import typer

from costcalc.cli import check, heads, memory, params, presets, scale, schema

app = typer.Typer(
    name="costcalc",
    help="What a transformer language model costs: exact parameters, MACs, FLOPs and bytes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from costcalc import __version__

        typer.echo(f"costcalc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """What a transformer language model costs: exact parameters, MACs, FLOPs and bytes."""


app.command("params")(params.params)
app.command("memory")(memory.memory)
app.command("check")(check.check)
app.command("schema")(schema.schema)
app.add_typer(presets.app, name="presets")
app.command("scale", cls=scale.ListOptionsCommand)(scale.scale)
app.command("heads")(heads.heads)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="costcalc")
