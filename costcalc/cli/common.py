"""What every command shares: the output format and error reporting."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup

from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from typer._click import Context

    from costcalc.render import Grid

# Options that several commands take, declared once.
FORMAT = typer.Option(
    "--format",
    "-f",
    help="Output format; jsonl has one shape for any number of models (docs/json.md).",
    case_sensitive=False,
)
FormatOption = Annotated[OutputFormat, FORMAT]
ExplainOption = Annotated[
    bool, typer.Option("--explain", help="Show each row's formula with the numbers put in.")
]
UnitsOption = Annotated[
    str, typer.Option("--units", help="Human figures: iec (MiB, GiB) or si (MB, GB).")
]


def count_option(*names: str, **kwargs: Any) -> Any:
    """A typer option (``Annotated[int | None, count_option("--batch", help=...)]``) whose value
    is a count written as costcalc writes every count: 8k, 8Ki, 1.5B, 1e12, 124_439_808
    (:func:`costcalc.units.parse_count`)."""
    return typer.Option(*names, parser=_count, **kwargs)


def size_option(*names: str, **kwargs: Any) -> Any:
    """A typer option whose value is a byte size: 24GiB, 80GB, 1.5e9B
    (:func:`costcalc.units.parse_bytes`)."""
    return typer.Option(*names, parser=_size, metavar="SIZE", **kwargs)


def reserve_option(*names: str, **kwargs: Any) -> Any:
    """A typer option whose value is a byte size or 0 (:func:`costcalc.gpus.parse_reserve`)."""
    return typer.Option(*names, parser=_reserve, metavar="SIZE", **kwargs)


class _BadValueError(Exception):
    """An option value its parser refused: the message, for :class:`Command` to print with the
    option's name (not a ValueError, which typer's pydantic layer would reword)."""


def _count(value: Any) -> int:
    from costcalc.units import parse_count

    return _parsed(parse_count, value)


def _size(value: Any) -> int:
    from costcalc.units import parse_bytes

    return _parsed(parse_bytes, value)


def _reserve(value: Any) -> int:
    from costcalc.gpus import parse_reserve

    return _parsed(parse_reserve, value)


def _parsed(parse: Callable[[str], int], value: Any) -> int:
    """``parse(value)`` for a value given on the command line; a default (an int) as it is."""
    from costcalc.errors import UsageError

    if isinstance(value, int):
        return value
    try:
        return parse(value)
    except UsageError as exc:
        raise _BadValueError(str(exc)) from None


def unwrap(text: str | None) -> str | None:
    """Help text for the terminal: each paragraph of a docstring joined into one line, so the
    terminal wraps it at its own width."""
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


VALUE_WORDS: dict[Any, str] = {int: "N", str: "TEXT"}
"""How help names an option's value, by its type, where the option names none itself."""


def _plain_metavars(params: list[Any]) -> list[Any]:
    """``params`` shown in plain words: on/off flags without a type (``--train``, not
    ``--train <bool>``), a number N and text TEXT (``--batch N``, not ``--batch <int>``)."""
    for param in params:
        if getattr(param, "is_bool_flag", False):
            param.metavar = ""
        elif param.param_type_name == "option" and param.metavar is None:
            param.metavar = VALUE_WORDS.get(_value_type(param))
    return params


def _value_type(param: Any) -> Any:
    """The type of an option's value (of each value, for a repeatable option)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    return get_args(annotation)[0] if get_origin(annotation) is list else annotation


def _coerce_given_only(param: Any) -> None:
    """Let ``param`` convert only a value that was given: typer builds a pydantic TypeAdapter
    for an option's value even when the option is absent (its value None, which it then
    passes through), and a command has some thirty options of which a run gives a few. A
    value its parser refuses ends the run as costcalc's errors do, the option named:
    ``error: --length: '8x' is not a count ...``, exit 2."""
    process = param.process_value

    def process_value(ctx: Context, value: Any) -> Any:
        if value is None and not param.required and param.callback is None:
            return () if param.multiple or param.nargs == -1 else None
        try:
            return process(ctx, value)
        except _BadValueError as exc:
            fail(f"{param.opts[0]}: {exc}", 2)

    param.process_value = process_value


class Command(TyperCommand):
    """A costcalc command: help paragraphs wrapped by the terminal, values named in plain
    words (:func:`_plain_metavars`), absent options left as they are
    (:func:`_coerce_given_only`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = unwrap(self.help)
        for param in self.params:
            _coerce_given_only(param)

    def get_params(self, ctx: Context) -> list[Any]:
        return _plain_metavars(super().get_params(ctx))


class Group(TyperGroup):
    """A group of costcalc commands, its help shown as :class:`Command`'s is."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = unwrap(self.help)

    def get_params(self, ctx: Context) -> list[Any]:
        return _plain_metavars(super().get_params(ctx))


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


def emit(
    fmt: OutputFormat,
    data: Any,
    grids: Sequence[Grid],
    records: Sequence[dict[str, Any]] | None = None,
) -> None:
    """Print ``data`` as JSON, ``records`` (one per model; by default ``data``, or each item
    of it when it is a list) as JSON Lines or tidy CSV, or ``grids`` as a table or Markdown."""
    from costcalc import render

    if records is None:
        records = data if isinstance(data, list) else [data]
    if fmt is OutputFormat.json:
        typer.echo(render.to_json(data))
    elif fmt is OutputFormat.jsonl:
        typer.echo(render.to_jsonl(records))
    elif fmt is OutputFormat.markdown:
        typer.echo(render.to_markdown(grids))
    elif fmt is OutputFormat.csv:
        typer.echo(render.to_csv(records))
    else:
        render.print_grids(grids)


# Serving engines (docs/engines.md): options of memory and plan.
ENGINE_PANEL = "Serving engine"
EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar="NAME",
        help="Count what an engine allocates: transformers (default: the formula), llamacpp "
        "(its model buffer, context cells and KV caches) or vllm (its KV cache blocks, "
        "blocks and concurrency for a budget); docs/engines.md.",
        rich_help_panel=ENGINE_PANEL,
    ),
]
CacheTypeKOption = Annotated[
    str | None,
    typer.Option(
        "--cache-type-k",
        metavar="TYPE",
        help="llama.cpp's -ctk: f16 (default), bf16, f32, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1.",
        rich_help_panel=ENGINE_PANEL,
    ),
]
CacheTypeVOption = Annotated[
    str | None,
    typer.Option(
        "--cache-type-v",
        metavar="TYPE",
        help="llama.cpp's -ctv (the same types).",
        rich_help_panel=ENGINE_PANEL,
    ),
]
BlockSizeOption = Annotated[
    int | None,
    count_option(
        "--block-size",
        metavar="TOKENS",
        help="vLLM's --block-size: tokens per KV cache block (default 16).",
        rich_help_panel=ENGINE_PANEL,
    ),
]
BatchedTokensOption = Annotated[
    int | None,
    count_option(
        "--max-num-batched-tokens",
        metavar="N",
        help="vLLM's --max-num-batched-tokens (default: vllm serve's for the device).",
        rich_help_panel=ENGINE_PANEL,
    ),
]
KvCacheMemoryOption = Annotated[
    int | None,
    size_option(
        "--kv-cache-memory",
        help="vLLM's --kv-cache-memory-bytes: the KV budget itself, like 20GiB (exact).",
        rich_help_panel=ENGINE_PANEL,
    ),
]
SwaFullOption = Annotated[
    bool,
    typer.Option(
        "--swa-full",
        help="llama.cpp's --swa-full: the sliding-window cache as large as the full one "
        "(llama-cpp-python's default).",
        rich_help_panel=ENGINE_PANEL,
    ),
]
