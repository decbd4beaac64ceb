"""Choosing models on the command line, the same way for every command that takes one.

``--preset`` (repeatable), ``--config`` (repeatable), ``--hf`` (repeatable) and overrides
(``--d 512``) applied on top. A command decorated with :func:`takes_models` gets these options
and receives a :class:`ModelSelection` as its ``models`` argument.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from costcalc.cli.common import count_option, user_errors
from costcalc.overrides import OVERRIDE_OPTIONS, overridden_name, split_overrides, with_ffn_width

if TYPE_CHECKING:
    from costcalc.checkpoint import Checkpoint
    from costcalc.loaders import LoadedModel

OVERRIDE_PANEL = "Overrides, applied on top of the preset or file"


def _override(spec_field: str, kind: Any, help: str, *aliases: str) -> tuple[str, Any]:
    """The option overriding ``spec_field``, named as errors about it name it; a whole number
    is a count (:func:`~costcalc.cli.common.count_option`)."""
    decls = (OVERRIDE_OPTIONS[spec_field], *aliases)
    make = count_option if kind is int else typer.Option
    option = make(*decls, help=help, rich_help_panel=OVERRIDE_PANEL)
    return spec_field, Annotated[kind | None, option]


PresetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--preset",
        "-p",
        metavar="NAME",
        help="A shipped preset (see `costcalc presets`); repeatable. NAME:d_model=1536 "
        "overrides fields of this model only.",
    ),
]
ConfigOption = Annotated[
    list[str] | None,
    typer.Option(
        "--config",
        "-c",
        metavar="FILE",
        help="A config file: costcalc YAML/JSON, nanoGPT-style or Hugging Face config.json; "
        "repeatable; FILE:d_model=1536 overrides fields of this model only.",
    ),
]
HubOption = Annotated[
    list[str] | None,
    typer.Option(
        "--hf",
        metavar="ORG/NAME[@REVISION]",
        help="A model on the Hugging Face Hub: its config.json and safetensors headers "
        "(never its weights), from the local cache when offline; repeatable.",
    ),
]
RevisionOption = Annotated[
    str | None,
    typer.Option(
        "--revision",
        metavar="REVISION",
        help="Branch, tag or commit of every --hf model that names none (default main).",
    ),
]
SELECTION: dict[str, Any] = {
    "preset": PresetOption,
    "config": ConfigOption,
    "hf": HubOption,
    "revision": RevisionOption,
}

# parameter -> (ModelSpec field, option annotation)
OVERRIDES: dict[str, tuple[str, Any]] = {
    "vocab": _override("vocab_size", int, "Vocabulary size V."),
    "context": _override("context_length", int, "Context length (position table rows)."),
    "d": _override("d_model", int, "Width D.", "--d-model"),
    "layers": _override("n_layers", int, "Layers L."),
    "heads": _override("n_heads", int, "Attention heads H.", "-H"),
    "kv_heads": _override("n_kv_heads", int, "Key/value heads (GQA/MQA)."),
    "head_dim": _override("head_dim", int, "Explicit head width."),
    "ffn": _override("ffn", str, "FFN kind: mlp, swiglu or geglu."),
    "ffn_mult": _override("ffn_mult", int, "FFN width as a multiple r of D."),
    "ffn_hidden": _override("ffn_hidden", int, "FFN hidden width."),
    "norm": _override("norm", str, "Norm kind: layernorm or rmsnorm."),
    "tie": _override("tie_embeddings", bool, "Tie the LM head to the token table."),
    "position": _override("position", str, "Position scheme: learned, sinusoidal, rotary or none."),
}

MODEL_PARAMETERS: tuple[inspect.Parameter, ...] = tuple(
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
    for name, annotation in [
        *SELECTION.items(),
        *((name, annotation) for name, (_, annotation) in OVERRIDES.items()),
    ]
)


class ModelSelection(NamedTuple):
    """The models a command was asked about, and the overrides to apply to each."""

    presets: Sequence[str]
    configs: Sequence[Path]
    hub_ids: Sequence[str]
    revision: str | None
    overrides: dict[str, Any]

    @classmethod
    def from_options(cls, values: dict[str, Any]) -> ModelSelection:
        """From the parsed options; unset overrides are dropped.

        Giving the FFN width one way (--ffn-hidden or --ffn-mult) replaces the other way the
        file may have used, since a config states one of them.
        """
        chosen = {
            spec_field: values[name]
            for name, (spec_field, _) in OVERRIDES.items()
            if values.get(name) is not None
        }
        return cls(
            presets=values.get("preset") or (),
            configs=config_paths(values.get("config") or ()),
            hub_ids=values.get("hf") or (),
            revision=values.get("revision"),
            overrides=with_ffn_width(chosen),
        )

    def load(self, default_preset: str | None = None) -> list[LoadedModel]:
        """Every model named by --preset, --config and --hf (in that order), with overrides."""
        from costcalc.errors import UsageError

        models, headers = self.load_with_checkpoints(default_preset)
        if headers:
            raise UsageError(
                f"{headers[0].source}: costcalc has no formula for this model; "
                "`costcalc params` reads its exact count from the checkpoint headers"
            )
        return models

    def load_with_checkpoints(
        self, default_preset: str | None = None
    ) -> tuple[list[LoadedModel], list[Checkpoint]]:
        """The models, and the checkpoints named that have no formula: a safetensors file or
        index, or a model folder whose family costcalc does not read."""
        from costcalc.errors import UsageError
        from costcalc.loaders import LoadedModel, load_preset

        if self.revision is not None and not self.hub_ids:
            raise UsageError("--revision chooses the revision of --hf models; name one with --hf")
        models = []
        for entry in self.presets:
            name, overrides = self._overrides_of(entry)
            models.append(_named(load_preset(name, overrides), overrides))
        headers: list[Checkpoint] = []
        sources: list[Path | str] = [*self.configs, *self.hub_ids]
        for source in sources:
            loaded = self._load_source(source)
            if isinstance(loaded, LoadedModel):
                models.append(loaded)
            else:
                headers.append(loaded)
        if not models and not headers and default_preset is not None:
            models.append(_named(load_preset(default_preset, self.overrides), self.overrides))
        if not models and not headers:
            raise UsageError(
                "name a model with --preset NAME, --config FILE or --hf ORG/NAME "
                "(see `costcalc presets`)"
            )
        return models, headers

    def _load_source(self, source: Path | str) -> LoadedModel | Checkpoint:
        """One --config path or --hf id: its model, or its checkpoint when costcalc has no
        formula for it (a safetensors file or index; a folder of an unsupported family)."""
        from costcalc.checkpoint import find_checkpoint, is_checkpoint_file, read_checkpoint
        from costcalc.errors import UnsupportedModelError
        from costcalc.loaders import hub_checkpoint, load_file, load_hub

        text, overrides = self._overrides_of(str(source))
        source = Path(text) if isinstance(source, Path) else text
        if isinstance(source, Path) and is_checkpoint_file(source):
            return read_checkpoint(source)
        try:
            if isinstance(source, str):
                model = load_hub(source, overrides, self.revision)
            else:
                model = load_file(source, overrides)
        except UnsupportedModelError:
            if overrides:
                raise
            if isinstance(source, str):
                found = hub_checkpoint(source, self.revision)
            else:
                found = find_checkpoint(source) if os.path.isdir(source) else None
            if found is None:
                raise
            return found
        return _named(model, overrides)

    def _overrides_of(self, entry: str) -> tuple[str, dict[str, Any]]:
        """A model's name and its overrides: the options', then its own ``NAME:field=value``."""
        name, own = split_overrides(entry)
        return name, {**self.overrides, **own}


def config_paths(given: Sequence[str]) -> tuple[Path, ...]:
    """The --config paths as given; an empty one is a usage error (as a path it would name
    the current folder, and a config.json there would be read unasked)."""
    from costcalc.errors import UsageError

    if any(not text for text in given):
        raise UsageError("--config: an empty path names no file; give a config file or folder")
    return tuple(map(Path, given))


def _named(model: LoadedModel, overrides: dict[str, Any]) -> LoadedModel:
    """``model`` named with the overrides applied to it: ``gpt2-small (d_model=1536)``."""
    return model._replace(name=overridden_name(model.name, overrides))


def takes_models(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``command`` the model options; it receives them as ``models: ModelSelection``."""
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.name != "models"]

    @functools.wraps(command)
    def run(**kwargs: Any) -> None:
        picked = {p.name: kwargs.pop(p.name) for p in MODEL_PARAMETERS}
        with user_errors():
            models = ModelSelection.from_options(picked)
        command(models=models, **kwargs)

    parameters = [*own, *MODEL_PARAMETERS]
    setattr(run, "__signature__", signature.replace(parameters=parameters))  # noqa: B010
    # The annotations of the parameters run takes, evaluated once (not the command's, as text).
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run
