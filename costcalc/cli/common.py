"""What every command shares: model selection, overrides, output format and error reporting."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from costcalc.loaders import LoadedModel
    from costcalc.render import Grid

PresetOption = Annotated[
    list[str] | None,
    typer.Option("--preset", "-p", help="A shipped preset (see `costcalc presets`); repeatable."),
]
ConfigOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--config",
        "-c",
        help="A config file: costcalc YAML/JSON, nanoGPT-style or Hugging Face config.json; "
        "repeatable.",
        dir_okay=True,
    ),
]
FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
]

OVERRIDE_HELP = "Overrides, applied on top of the preset or file"
VocabOption = Annotated[
    int | None, typer.Option("--vocab", help="Vocabulary size V.", rich_help_panel=OVERRIDE_HELP)
]
ContextOption = Annotated[
    int | None,
    typer.Option(
        "--context", help="Context length (position table rows).", rich_help_panel=OVERRIDE_HELP
    ),
]
WidthOption = Annotated[
    int | None, typer.Option("--d", "--d-model", help="Width D.", rich_help_panel=OVERRIDE_HELP)
]
LayersOption = Annotated[
    int | None, typer.Option("--layers", help="Layers L.", rich_help_panel=OVERRIDE_HELP)
]
HeadsOption = Annotated[
    int | None, typer.Option("--heads", help="Attention heads H.", rich_help_panel=OVERRIDE_HELP)
]
KvHeadsOption = Annotated[
    int | None,
    typer.Option("--kv-heads", help="Key/value heads (GQA/MQA).", rich_help_panel=OVERRIDE_HELP),
]
HeadDimOption = Annotated[
    int | None,
    typer.Option("--head-dim", help="Explicit head width.", rich_help_panel=OVERRIDE_HELP),
]
FfnOption = Annotated[
    str | None,
    typer.Option("--ffn", help="FFN kind: mlp, swiglu or geglu.", rich_help_panel=OVERRIDE_HELP),
]
FfnMultOption = Annotated[
    int | None,
    typer.Option(
        "--ffn-mult", help="FFN width as a multiple r of D.", rich_help_panel=OVERRIDE_HELP
    ),
]
FfnHiddenOption = Annotated[
    int | None,
    typer.Option("--ffn-hidden", help="FFN hidden width.", rich_help_panel=OVERRIDE_HELP),
]
NormOption = Annotated[
    str | None,
    typer.Option("--norm", help="Norm kind: layernorm or rmsnorm.", rich_help_panel=OVERRIDE_HELP),
]
TieOption = Annotated[
    bool | None,
    typer.Option(
        "--tie/--no-tie", help="Tie the LM head to the token table.", rich_help_panel=OVERRIDE_HELP
    ),
]
PositionOption = Annotated[
    str | None,
    typer.Option(
        "--position",
        help="Position scheme: learned, sinusoidal, rotary or none.",
        rich_help_panel=OVERRIDE_HELP,
    ),
]


def overrides_from(**values: Any) -> dict[str, Any]:
    """The overrides the user gave, as ModelSpec fields (options left unset are dropped).

    Giving the FFN width one way (--ffn-hidden or --ffn-mult) replaces the other way the file
    may have used, since a config states one of them.
    """
    fields = {
        "vocab": "vocab_size",
        "context": "context_length",
        "d": "d_model",
        "layers": "n_layers",
        "heads": "n_heads",
        "kv_heads": "n_kv_heads",
        "head_dim": "head_dim",
        "ffn": "ffn",
        "ffn_mult": "ffn_mult",
        "ffn_hidden": "ffn_hidden",
        "norm": "norm",
        "tie": "tie_embeddings",
        "position": "position",
    }
    chosen = {fields[key]: value for key, value in values.items() if value is not None}
    if "ffn_hidden" in chosen:
        chosen.setdefault("ffn_mult", None)
    elif "ffn_mult" in chosen:
        chosen.setdefault("ffn_hidden", None)
    return chosen


def load_models(
    presets: Sequence[str] | None,
    configs: Sequence[Path] | None,
    overrides: dict[str, Any],
    default_preset: str | None = None,
) -> list[LoadedModel]:
    """Every model named by --preset and --config (in that order), with overrides applied."""
    from costcalc.errors import UsageError
    from costcalc.loaders import load_file, load_preset

    models = [load_preset(name, overrides) for name in presets or ()]
    models += [load_file(path, overrides) for path in configs or ()]
    if not models and default_preset is not None:
        models.append(load_preset(default_preset, overrides))
    if not models:
        raise UsageError(
            "name a model with --preset NAME or --config FILE (see `costcalc presets`)"
        )
    return models


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn costcalc's errors into one clear message on stderr and a non-zero exit."""
    from costcalc.errors import CostcalcError

    try:
        yield
    except CostcalcError as exc:
        fail(str(exc), exc.exit_code)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` to stderr and exit with ``code``."""
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


def emit(fmt: OutputFormat, data: Any, grids: Sequence[Grid]) -> None:
    """Print ``data`` as JSON or ``grids`` as a table, Markdown or CSV."""
    from costcalc import render

    if fmt is OutputFormat.json:
        typer.echo(render.to_json(data))
    elif fmt is OutputFormat.markdown:
        typer.echo(render.to_markdown(grids))
    elif fmt is OutputFormat.csv:
        typer.echo(render.to_csv(grids))
    else:
        render.print_grids(grids)
