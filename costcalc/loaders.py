"""From a preset, a file and command-line overrides to one validated :class:`LoadedModel`.

A file is recognised by its keys: ``model_type`` marks a Hugging Face ``config.json``; nanoGPT's
``n_embd``/``n_layer``/``n_head``/``block_size`` mark a nanoGPT-style config; anything else is
costcalc's own format. Overrides (``--d 512``) are applied on top of what the file says, then the
whole model is validated once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

from costcalc.errors import ConfigError, FileReadError, Problem
from costcalc.frozen import FrozenMap
from costcalc.spec import ModelSpec

if TYPE_CHECKING:
    from costcalc.checkpoint import Checkpoint, IndexOnly
    from costcalc.config import Budget
    from costcalc.files import Document

M = TypeVar("M", bound=ModelSpec)
DEFAULT_WEIGHTS = "bf16"
"""The weights' dtype when neither ``--dtype`` nor the checkpoint names one."""
FormatName = Literal["costcalc", "nanogpt", "huggingface"]


class LoadedModel(NamedTuple):
    """A validated model with what its config says about itself."""

    spec: ModelSpec
    name: str
    origin: str
    format: FormatName = "costcalc"
    description: str | None = None
    source: str | None = None
    budget: Budget | None = None
    key_names: Mapping[str, str] = FrozenMap()
    """The file's own key for each spec field, where it differs (``block_size``)."""
    notes: tuple[str, ...] = ()
    """What the count leaves out, in words."""
    checkpoint: Checkpoint | None = None
    """The model's safetensors headers, when its folder holds them."""
    family: str | None = None
    """A Hugging Face config's ``model_type``, which names the model's modules."""
    weight_format: str | None = None
    """The format its checkpoint stores the weights in (a ``quantization_config``), as
    ``--dtype`` writes it (``mxfp4:-attn``, ``fp8-block``); None: unquantized, or a format
    costcalc does not size (a note says which)."""
    weight_format_source: str | None = None
    """Where ``weight_format`` was read: ``its quantization_config, quant_method mxfp4``."""
    checkpoint_index: IndexOnly | None = None
    """The model folder's index when the folder holds none of its shards (with the shards,
    ``checkpoint`` has their headers)."""
    warnings: tuple[Problem, ...] = ()
    """Keys of the file that are most likely misspelled (also among ``notes``)."""

    def weights_dtype(self, given: str | None = None) -> str:
        """The dtype or format to count the weights in: ``given`` (``--dtype``) when there is
        one, else the format the checkpoint stores, else bf16."""
        return given or self.weight_format or DEFAULT_WEIGHTS


def detect_format(data: Mapping[str, Any]) -> FormatName:
    """Which format a parsed config is in, judged by its keys."""
    if "model_type" in data:
        return "huggingface"
    if {"n_embd", "n_layer", "n_head"} <= data.keys():
        return "nanogpt"
    return "costcalc"


def load_preset(name: str, overrides: Mapping[str, Any] | None = None) -> LoadedModel:
    """A shipped preset, with overrides applied. Without overrides it is built as validation
    would build it, without validating: presets are valid (the test suite checks each)."""
    from costcalc.errors import UnknownPresetError
    from costcalc.presets import preset_data, preset_text, resolve_preset
    from costcalc.spec import trusted_spec

    try:
        key = resolve_preset(name)
    except UnknownPresetError:
        from costcalc.errors import UsageError
        from costcalc.files import looks_like_path

        if looks_like_path(name):
            message = f"{name!r} is a path, not a preset name; a file is read with --config"
            raise UsageError(message) from None
        raise
    if not overrides:
        data = preset_data(key)
        return LoadedModel(
            spec=trusted_spec(data),
            name=data.get("name") or key,
            origin=f"preset {key}",
            description=data.get("description"),
            source=data.get("source"),
        )
    from costcalc.files import parse_document

    doc = parse_document(preset_text(key), f"preset {key}")
    return _load_native(doc, key, overrides)


def load_file(path: str | Path, overrides: Mapping[str, Any] | None = None) -> LoadedModel:
    """A config file in any supported format, or a model folder (its ``config.json`` and, where
    present, its safetensors headers), with overrides applied."""
    from costcalc.files import read_document

    if os.path.isdir(path):
        return load_folder(Path(path), overrides)
    return load_document(read_document(path), overrides)


def load_folder(folder: Path, overrides: Mapping[str, Any] | None = None) -> LoadedModel:
    """A model folder as ``from_pretrained`` takes it: ``config.json`` plus safetensors headers
    (or, when the folder holds an index but none of its shards, the index's ``total_size``)."""
    from costcalc.files import read_document

    if not os.path.isfile(folder / "config.json"):
        raise FileReadError(
            str(folder),
            "is a directory without a config.json (a model folder holds config.json "
            "and its safetensors files)",
        )
    doc = read_document(folder / "config.json")
    model = load_document(doc, overrides)
    return model if overrides else with_checkpoint(model, folder, doc)


def with_checkpoint(model: LoadedModel, folder: Path, doc: Document | None = None) -> LoadedModel:
    """``model`` with its folder's safetensors headers (or, when the folder holds an index but
    none of its shards, the index, with the dtype its config ``doc`` declares)."""
    from costcalc.checkpoint import find_checkpoint

    index = _index_only(doc, folder)
    if index is not None:
        return model._replace(checkpoint_index=index)
    return model._replace(checkpoint=find_checkpoint(folder))


def _index_only(doc: Document | None, folder: Path, cache: Path | None = None) -> IndexOnly | None:
    """The folder's index without its shards (:func:`~costcalc.checkpoint.index_without_shards`;
    in a Hub ``cache``, one missing any shard), with the dtype ``doc`` declares."""
    from dataclasses import replace

    from costcalc.checkpoint import index_without_shards
    from costcalc.formats.hf_quant import declared_dtype

    index = index_without_shards(folder, cache, partial=cache is not None)
    if index is None or doc is None:
        return index
    return replace(index, dtype=declared_dtype(doc))


def load_hub(
    hub_id: str, overrides: Mapping[str, Any] | None = None, revision: str | None = None
) -> LoadedModel:
    """``ORG/NAME[@REVISION]`` from the Hugging Face Hub or its local cache (costcalc.hub): its
    ``config.json``, and its safetensors headers when no override changes the model; from the
    cache, the index's ``total_size`` when the shards are not all cached (an online run caches
    the index alone)."""
    from costcalc.files import read_document
    from costcalc.hub import fetch_checkpoint, fetch_config, hub_settings, split_hub_id

    found = fetch_config(*split_hub_id(hub_id, revision))
    doc = read_document(found.path)
    model = load_document(doc, overrides)._replace(name=found.label)
    if overrides:
        return model
    if not found.downloaded:
        index = _index_only(doc, found.path.parent, hub_settings().cache)
        if index is not None:
            return model._replace(checkpoint_index=index)
    return model._replace(checkpoint=fetch_checkpoint(found))


def hub_checkpoint(hub_id: str, revision: str | None = None) -> Checkpoint | None:
    """The safetensors headers of ``ORG/NAME[@REVISION]``, or None when it has none."""
    from costcalc.hub import fetch_checkpoint, fetch_config, split_hub_id

    return fetch_checkpoint(fetch_config(*split_hub_id(hub_id, revision)))


def load_document(doc: Document, overrides: Mapping[str, Any] | None = None) -> LoadedModel:
    """A parsed config in any supported format, with overrides applied."""
    from costcalc.files import check_finite

    kind = detect_format(doc.data)
    if kind != "huggingface":
        check_finite(doc)
    if kind == "costcalc":
        return _load_native(doc, file_model_name(doc.path), overrides or {})
    from costcalc.formats.hf_quant import stored_format

    if kind == "huggingface":
        from costcalc.formats.huggingface import translate
    else:
        from costcalc.formats.nanogpt import translate
    translation = translate(doc)
    try:
        spec = _validate(
            ModelSpec,
            {**translation.fields, **(overrides or {})},
            doc,
            overrides,
            translation.key_names,
        )
    except ConfigError as exc:
        raise ConfigError(doc.path, [*translation.problems, *exc.problems]) from None
    if translation.problems:
        raise ConfigError(doc.path, translation.problems)
    _check_overrides_apply(spec, overrides, doc.path)
    stored = stored_format(doc, spec) if kind == "huggingface" else None
    return LoadedModel(
        spec=spec,
        name=translation.name or file_model_name(doc.path),
        origin=doc.path,
        format=kind,
        description=translation.description,
        key_names=translation.key_names,
        notes=translation.notes
        + tuple(f"{w.field}: {w.message}." for w in translation.warnings)
        + (stored.notes if stored else ()),
        warnings=translation.warnings,
        family=translation.family,
        weight_format=stored.label if stored else None,
        weight_format_source=(
            f"its {stored.key}, quant_method {stored.method}" if stored and stored.label else None
        ),
    )


def file_model_name(path: str) -> str:
    """A model's name from its file: the stem, or the folder of a file named ``config.json``
    (the current folder's name for ``./config.json``)."""
    p = Path(path)
    if p.stem != "config":
        return p.stem
    return p.parent.name or Path(os.path.abspath(p)).parent.name or p.stem


def _load_native(doc: Document, default_name: str, overrides: Mapping[str, Any]) -> LoadedModel:
    from costcalc.config import SPEC_FIELDS, ConfigFile

    parsed = _validate(ConfigFile, {**doc.data, **overrides}, doc, overrides)
    # The model part of an already validated config: no second validation.
    spec = ModelSpec.model_construct(**{name: getattr(parsed, name) for name in SPEC_FIELDS})
    _check_overrides_apply(spec, overrides, doc.path)
    return LoadedModel(
        spec=spec,
        name=parsed.name or default_name,
        origin=doc.path,
        description=parsed.description,
        source=parsed.source,
        budget=parsed.budget,
    )


_SAME_KEY = {"ffn_mult": ("ffn_mult", "ffn_hidden"), "ffn_hidden": ("ffn_mult", "ffn_hidden")}
"""Keys that set one thing two ways: a group's FFN width in either wins over the other."""


def _check_overrides_apply(
    spec: ModelSpec, overrides: Mapping[str, Any] | None, source: str
) -> None:
    """A ConfigError for an override (``--heads 4``, ``NAME:heads=4``) that a layer group sets
    itself: the group's value wins, so the override would change nothing while the model's name
    said it did. Changing a layered model's blocks is done in its file, group by group."""
    if spec.layers is None or not overrides:
        return
    from costcalc.option_names import in_api
    from costcalc.overrides import OVERRIDE_OPTIONS
    from costcalc.spec import layer_runs

    runs = [(path, keys) for path, keys, _ in layer_runs(spec)]
    problems = []
    for field, value in overrides.items():
        keys = _SAME_KEY.get(field, (field,))
        setting = next((path for path, run in runs if run.keys() & set(keys)), None)
        # None clears a value (``sliding_window=None``), except the FFN width's other form,
        # which giving one form clears alongside it
        cleared_with = [overrides.get(key) for key in keys if key != field]
        if value is None and any(other is not None for other in cleared_with):
            continue
        if setting is not None:
            message = (
                f"{setting} sets {field} itself, and a layer group's own value wins over the "
                "model's, so the override would not reach its layers; set it group by group in "
                "a config file"
            )
            where = (
                f"{field} (override)"
                if in_api()
                else f"{OVERRIDE_OPTIONS.get(field, field)} (command line)"
            )
            problems.append(Problem(where, message))
    if problems:
        raise ConfigError(source, problems)


def _validate(
    model: type[M],
    data: dict[str, Any],
    doc: Document,
    overrides: Mapping[str, Any] | None,
    key_names: Mapping[str, str] | None = None,
) -> M:
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        from costcalc.config import CONFIG_FIELDS, SPEC_FIELDS, ConfigFile, problems_from

        known = CONFIG_FIELDS if model is ConfigFile else SPEC_FIELDS
        problems = problems_from(exc, doc, overrides or {}, known, key_names, data)
        raise ConfigError(doc.path, problems) from None
