"""`costcalc schema`: the JSON Schema of costcalc's config format."""

from __future__ import annotations

import typer


def schema() -> None:
    """Print the JSON Schema of costcalc's config format, for editors that validate YAML/JSON."""
    from costcalc.config import config_schema
    from costcalc.render import to_json

    typer.echo(to_json(config_schema()))
