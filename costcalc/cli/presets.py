"""`costcalc presets`: the shipped model presets."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from costcalc.cli.common import FORMAT, Command, FormatOption, Group, emit, user_errors
from costcalc.render import OutputFormat

app = typer.Typer(
    cls=Group, help="List the shipped presets, or show one as YAML.", no_args_is_help=False
)


@app.callback(invoke_without_command=True)
def presets(ctx: typer.Context, fmt: FormatOption = OutputFormat.table) -> None:
    """List the shipped presets: name, parameters and what it is (`presets show NAME` gives its
    whole description and where its numbers come from)."""
    if ctx.invoked_subcommand is not None:
        return
    from costcalc.loaders import load_preset
    from costcalc.params import total_params
    from costcalc.presets import aliases, preset_names, rests_on_assumptions
    from costcalc.render import Grid
    from costcalc.units import format_count

    with user_errors():
        models = [load_preset(name) for name in preset_names()]
    alias_of: dict[str, list[str]] = {}
    for alias, target in aliases().items():
        alias_of.setdefault(target, []).append(alias)
    counts = [total_params(m.spec) for m in models]
    data = [
        {
            "name": m.name,
            "aliases": alias_of.get(m.name, []),
            "description": m.description,
            "source": m.source,
            "assumed_values": rests_on_assumptions(m.source),
            "parameters": count,
        }
        for m, count in zip(models, counts, strict=True)
    ]
    rows = [
        [
            ", ".join([m.name, *alias_of.get(m.name, [])])
            + (" *" if rests_on_assumptions(m.source) else ""),
            format_count(count),
            (m.description or "").split(" (", 1)[0],
        ]
        for m, count in zip(models, counts, strict=True)
    ]
    notes = [
        "`costcalc presets show NAME` prints a preset's file: its whole description and where "
        "its numbers come from (JSON has both for every preset). * rests on assumed values (the "
        "source does not give them all); `presets show NAME` says which."
    ]
    emit(fmt, data, [Grid("Presets", ["name", "parameters", "model"], rows, notes)])


class ShowFormat(StrEnum):
    """How `costcalc presets show` prints a preset: its YAML file, or the same as JSON."""

    yaml = "yaml"
    json = "json"
    jsonl = "jsonl"


@app.command("show", cls=Command)
def show(
    name: Annotated[str, typer.Argument(help="Preset name or alias.")],
    fmt: Annotated[ShowFormat, FORMAT] = ShowFormat.yaml,
) -> None:
    """Print a preset's YAML: a valid --config file to start from."""
    import yaml

    from costcalc.presets import preset_text
    from costcalc.render import to_json, to_jsonl

    with user_errors():
        text = preset_text(name)
    if fmt is ShowFormat.yaml:
        typer.echo(text.rstrip("\n"))
    else:
        data = yaml.safe_load(text)
        typer.echo(to_json(data) if fmt is ShowFormat.json else to_jsonl([data]))
