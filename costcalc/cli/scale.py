"""`costcalc scale`: how the leading cost terms grow when one dimension grows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from costcalc.cli.common import Command, FormatOption, emit, user_errors
from costcalc.cli.workload import PANEL, CausalOption
from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from typer._click import Context

    from costcalc.loaders import LoadedModel

LIST_OPTIONS = ("--d", "--vocab", "--layers", "--length", "--context")
SPEC_FIELDS = {
    "d": "d_model",
    "vocab": "vocab_size",
    "layers": "n_layers",
    "context": "context_length",
}
COURSE_PRESET = "lrn-gpt"
COURSE_EXAMPLE = "the embedding notes' cost example"
_NUMBER = re.compile(r"-?\d")


def spread_values(args: Sequence[str], names: Sequence[str]) -> list[str]:
    """``--d 256 512`` -> ``--d 256 --d 512`` for the options in ``names``: every bare value after
    such an option's first value repeats the option (a leading ``-digit`` is a value too)."""
    out: list[str] = []
    current: str | None = None
    expect_value = False
    for arg in args:
        if arg == "--":
            current = None
        name = arg.split("=", 1)[0]
        if expect_value:
            out.append(arg)
            expect_value = False
        elif name in names:
            current = name
            out.append(arg)
            expect_value = "=" not in arg
        elif current is not None and (not arg.startswith("-") or _NUMBER.match(arg)):
            out += [current, arg]
        else:
            current = None
            out.append(arg)
    return out


class ListOptionsCommand(Command):
    """A command whose list options take several values after one flag: ``--d 256 512``."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, spread_values(args, LIST_OPTIONS))


DOption = Annotated[list[int] | None, typer.Option("--d", help="Widths D: --d 256 512 1024.")]
VocabOption = Annotated[list[int] | None, typer.Option("--vocab", help="Vocabulary sizes V.")]
LayersOption = Annotated[list[int] | None, typer.Option("--layers", help="Layer counts L.")]
LengthsOption = Annotated[
    list[int] | None,
    typer.Option(
        "--length",
        "-T",
        help="Tokens T per sequence (default 4, as in the embedding notes' cost example).",
    ),
]
PresetOption = Annotated[
    list[str] | None,
    typer.Option("--preset", "-p", metavar="NAME", help="The base model: a shipped preset."),
]
ConfigOption = Annotated[
    list[Path] | None,
    typer.Option("--config", "-c", metavar="FILE", help="The base model: a config file."),
]
BatchOption = Annotated[
    int | None,
    typer.Option(
        "--batch",
        "-B",
        help="Sequences B (default 2, as in the embedding notes' cost example).",
        rich_help_panel=PANEL,
    ),
]
ContextOption = Annotated[
    list[int] | None, typer.Option("--context", help="Context lengths (position table rows).")
]


def scale(
    d: DOption = None,
    vocab: VocabOption = None,
    layers: LayersOption = None,
    length: LengthsOption = None,
    context: ContextOption = None,
    preset: PresetOption = None,
    config: ConfigOption = None,
    batch: BatchOption = None,
    causal: CausalOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Grow one dimension and see each leading cost term grow: values and ratios to the first.

    Vary one of --d, --vocab, --layers, --length, --context with two or more values
    (`--d 256 512`); give the others one value to fix them. With no model named, the base is the
    cost example of the course notes on embeddings: V=50,257, context 1,024, one GPT-2 block
    with r=4 and H=8 (lrn-gpt's GPTConfig, the course's small GPT), B=2, T=4.
    """
    from costcalc.errors import UsageError
    from costcalc.scale import SEED_BATCH, SEED_LENGTH, scale_grids, scale_result

    given = {"d": d, "vocab": vocab, "layers": layers, "length": length, "context": context}
    with user_errors():
        varied = [name for name, values in given.items() if values and len(values) > 1]
        if len(varied) != 1:
            options = ", ".join(f"--{name}" for name in given)
            problem = "vary one dimension at a time" if varied else "nothing to compare"
            raise UsageError(f"{problem}: give two or more values to one of {options}")
        dimension = varied[0]
        fixed = {
            SPEC_FIELDS[name]: values[0]
            for name, values in given.items()
            if values and name != dimension and name in SPEC_FIELDS
        }
        B = SEED_BATCH if batch is None else batch
        T = None if dimension == "length" else (length[0] if length else SEED_LENGTH)
        models = [
            (value, _load(preset, config, {**fixed, **_override(dimension, value)}))
            for value in given[dimension] or ()
        ]
        for value, model in models:
            _check(model, B, value if T is None else T)
        seed = not preset and not config
        name = COURSE_EXAMPLE if seed else models[0][1].name
        result = scale_result(name, dimension, [(v, m.spec) for v, m in models], B, T, causal)
    setting = _setting(models[0][1], seed, B, T)
    emit(fmt, result.to_dict(), scale_grids(result, setting, chart=fmt is OutputFormat.table))


def _override(dimension: str, value: int) -> dict[str, int]:
    return {SPEC_FIELDS[dimension]: value} if dimension in SPEC_FIELDS else {}


def _load(
    preset: list[str] | None, config: list[Path] | None, overrides: dict[str, Any]
) -> LoadedModel:
    """The one base model with ``overrides``; the embedding notes' cost example when none is
    named."""
    from costcalc.errors import UsageError
    from costcalc.loaders import load_file, load_preset

    named = [*(preset or ()), *(config or ())]
    if len(named) > 1:
        raise UsageError("scale compares one model: give one --preset or --config")
    if config:
        return load_file(config[0], overrides)
    if preset:
        return load_preset(preset[0], overrides)
    return load_preset(COURSE_PRESET, {"n_layers": 1, **overrides})


def _check(model: LoadedModel, batch: int, length: int) -> None:
    from costcalc.compute import check_count, check_positions

    check_count("batch", batch)
    check_count("length", length)
    check_positions(model.spec, "length", length, length)


def _setting(model: LoadedModel, seed: bool, B: int, T: int | None) -> str:
    """One line saying what the base model and workload are."""
    workload = f"B={B:,}" + ("" if T is None else f", T={T:,}")
    if seed:
        return (
            "Base: the cost example of the course notes on embeddings: V=50,257, context 1,024, "
            "one GPT-2 block (r=4, H=8, as in lrn-gpt's GPTConfig, the course's small GPT), "
            f"{workload}."
        )
    return f"Base: {model.name}, {model.spec.n_layers:,} blocks, {workload}."
