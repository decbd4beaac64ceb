"""`costcalc schema`: the JSON Schema of costcalc's config format."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from costcalc.cli.common import FORMAT


class SchemaFormat(StrEnum):
    """How `costcalc schema` prints: indented JSON, or one line (JSON Lines)."""

    json = "json"
    jsonl = "jsonl"


def schema(
    fmt: Annotated[SchemaFormat, FORMAT] = SchemaFormat.json,
) -> None:
    """Print the JSON Schema of costcalc's config format, for editors that validate YAML/JSON."""
    from costcalc.config import config_schema
    from costcalc.render import to_json, to_jsonl

    data = config_schema()
    typer.echo(to_json(data) if fmt is SchemaFormat.json else to_jsonl([data]))
