"""`costcalc scale`: how the leading cost terms grow when one dimension grows."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from costcalc.cli.common import Command, FormatOption, count_option, emit, user_errors
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


DOption = Annotated[list[int] | None, count_option("--d", help="Widths D: --d 256 512 1024.")]
VocabOption = Annotated[list[int] | None, count_option("--vocab", help="Vocabulary sizes V.")]
LayersOption = Annotated[list[int] | None, count_option("--layers", help="Layer counts L.")]
LengthsOption = Annotated[
    list[int] | None,
    count_option(
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
    list[str] | None,
    typer.Option("--config", "-c", metavar="FILE", help="The base model: a config file."),
]
BatchOption = Annotated[
    int | None,
    count_option(
        "--batch",
        "-B",
        help="Sequences B (default 2, as in the embedding notes' cost example).",
        rich_help_panel=PANEL,
    ),
]
ContextOption = Annotated[
    list[int] | None, count_option("--context", help="Context lengths (position table rows).")
]


def _with_model_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``scale`` --hf and every override but the dimensions it varies, as other commands
    have them; it receives them as ``others``."""
    from costcalc.cli.models import OVERRIDES, SELECTION

    extra = {"hf": SELECTION["hf"]} | {
        name: annotation for name, (_, annotation) in OVERRIDES.items() if name not in SPEC_FIELDS
    }
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.name != "others"]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
        for name, kind in extra.items()
    ]

    @functools.wraps(command)
    def run(**kwargs: Any) -> None:
        command(others={name: kwargs.pop(name) for name in extra}, **kwargs)

    setattr(run, "__signature__", signature.replace(parameters=[*own, *added]))  # noqa: B010
    return run


@_with_model_options
def scale(
    others: dict[str, Any],
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
    (`--d 256 512`); give the others one value to fix them. The base is one --preset, --config
    or --hf model, with any other override (--heads 16) on top. With no model named, the base is
    the cost example of the course notes on embeddings: V=50,257, context 1,024, one GPT-2 block
    with r=4 and H=8 (lrn-gpt's GPTConfig, the course's small GPT), B=2, T=4.
    """
    from costcalc.cli.models import ModelSelection
    from costcalc.errors import UsageError
    from costcalc.overrides import overridden_name
    from costcalc.scale import (
        SEED_BATCH,
        SEED_LENGTH,
        held_and_derived_notes,
        scale_grids,
        scale_result,
    )

    given = {"d": d, "vocab": vocab, "layers": layers, "length": length, "context": context}
    with user_errors():
        varied = [name for name, values in given.items() if values and len(values) > 1]
        if len(varied) != 1:
            options = ", ".join(f"--{name}" for name in given)
            problem = "vary one dimension at a time" if varied else "nothing to compare"
            raise UsageError(f"{problem}: give two or more values to one of {options}")
        dimension = varied[0]
        base = ModelSelection.from_options({**others, "preset": preset, "config": config})
        if len([*base.presets, *base.configs, *base.hub_ids]) > 1:
            raise UsageError("scale compares one model: give one --preset, --config or --hf")
        fixed = {
            **base.overrides,
            **{
                SPEC_FIELDS[name]: values[0]
                for name, values in given.items()
                if values and name != dimension and name in SPEC_FIELDS
            },
        }
        B = SEED_BATCH if batch is None else batch
        T = None if dimension == "length" else (length[0] if length else SEED_LENGTH)
        course = not (base.presets or base.configs or base.hub_ids)
        if course:
            base = base._replace(presets=[COURSE_PRESET])
            fixed = {"n_layers": 1, **fixed}
        models = [
            (value, base._replace(overrides={**fixed, **_override(dimension, value)}).load()[0])
            for value in given[dimension] or ()
        ]
        for value, model in models:
            _check(model, B, value if T is None else T)
        plain = models[0][1].name.split(" (")[0]
        name = COURSE_EXAMPLE if course else overridden_name(plain, fixed)
        result = scale_result(name, dimension, [(v, m.spec) for v, m in models], B, T, causal)
    defaults = [f"B={B}"] if batch is None else []
    defaults += [f"T={T}"] if T is not None and not length else []
    setting = [_setting(models[0][1], name, course, B, T)]
    if defaults:
        setting[0] += f" {' and '.join(defaults)}: the cost example's " + (
            "defaults (--batch, --length)." if len(defaults) == 2 else "default."
        )
    setting += held_and_derived_notes(result, models[0][1].spec)
    emit(fmt, result.to_dict(), scale_grids(result, setting), result.records())


def _override(dimension: str, value: int) -> dict[str, int]:
    return {SPEC_FIELDS[dimension]: value} if dimension in SPEC_FIELDS else {}


def _check(model: LoadedModel, batch: int, length: int) -> None:
    from costcalc.compute import check_count, check_positions

    check_count("batch", batch)
    check_count("length", length)
    check_positions(model.spec, "length", length, length)


def _setting(model: LoadedModel, name: str, seed: bool, B: int, T: int | None) -> str:
    """One line saying what the base model and workload are."""
    workload = f"B={B:,}" + ("" if T is None else f", T={T:,}")
    if seed:
        return (
            "Base: the cost example of the course notes on embeddings: V=50,257, context 1,024, "
            "one GPT-2 block (r=4, H=8, as in lrn-gpt's GPTConfig, the course's small GPT), "
            f"{workload}."
        )
    return f"Base: {name}, {model.spec.n_layers:,} blocks, {workload}."
