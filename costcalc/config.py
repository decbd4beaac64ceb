"""costcalc's own config format, and turning any config into a validated :class:`ModelSpec`.

A costcalc config (YAML or JSON) is flat: optional metadata (``name``, ``description``,
``source``), the :class:`ModelSpec` fields, and an optional ``budget:`` section. Unknown keys are
errors with a "did you mean" hint. Presets are files in this format.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
)
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import core_schema

from costcalc.blocks import DEFERRED
from costcalc.errors import Problem, UsageError
from costcalc.file_limits import KeyPath
from costcalc.files import Document
from costcalc.option_names import in_api
from costcalc.overrides import OVERRIDE_OPTIONS
from costcalc.spec import ModelSpec, StructureError, structural_problems
from costcalc.units import (
    BYTE_UNITS,
    COUNT_SUFFIXES,
    DTYPES,
    parse_bytes,
    parse_count,
    quantity_pattern,
)
from costcalc.weight_format import check_weight_dtype

METADATA_KEYS = ("name", "description", "source")

INTERPOLATION = re.compile(r"\$\{[^}]*\}")
"""A Hydra/OmegaConf interpolation such as ``${data.seq_len}``."""

YAML11_BOOLEANS = frozenset({"yes", "no", "on", "off", "y", "n"})
"""Words YAML 1.1 reads as booleans and YAML 1.2 (costcalc's reading) as text."""


def _quantity(parse: Callable[[str], int]) -> Callable[[object], object]:
    """A before-validator: a string like '30M' goes through ``parse``; a number stays as it is
    (the strict integer check after it refuses booleans and floats)."""

    def convert(value: object) -> object:
        if isinstance(value, str):
            try:
                return parse(value)
            except UsageError as exc:
                raise ValueError(str(exc)) from None
        return value

    return convert


def _quantity_schema(units: Mapping[str, int], example: str) -> WithJsonSchema:
    return WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 1},
                {"type": "string", "pattern": quantity_pattern(units)},
            ],
            "examples": [example],
        }
    )


ParamLimit = Annotated[
    int,
    BeforeValidator(_quantity(parse_count)),
    Field(strict=True, ge=1),
    _quantity_schema(COUNT_SUFFIXES, "30M"),
]
ByteLimit = Annotated[
    int,
    BeforeValidator(_quantity(parse_bytes)),
    Field(strict=True, ge=1),
    _quantity_schema(BYTE_UNITS, "1GiB"),
]


FORMAT_PATTERN = (
    r"^(nf4|fp4|llm-int8|gptq-int4|gptq-int8|awq-int4|fp8-tensor|fp8-channel|fp8-block|mxfp4|nvfp4"
    r"|w4a16|w8a16|w8a8)"
    r"(:[^:]+)?$|^gguf:[A-Za-z0-9_]+(,.+)?$"
)
"""What the JSON Schema lets through as a quantized format (costcalc checks the options)."""


class Budget(BaseModel):
    """Limits a config declares for itself (checked by ``costcalc check``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    max_params: ParamLimit | None = Field(
        default=None, description="Most parameters allowed: a count like 124439808 or 30M."
    )
    max_weight_bytes: ByteLimit | None = Field(
        default=None, description="Most weight bytes allowed: like 1GiB (2^30) or 500MB (10^6)."
    )
    dtype: str | None = Field(
        default=None,
        description=(
            "The dtype or quantized format max_weight_bytes is measured in: fp32, bf16, fp16, "
            "fp8, int8, int4 (raw, no scales) or a format such as nf4, gptq-int4:g128, "
            "awq-int4, fp8-block, gguf:Q4_K_M (docs/quantization.md). Default: as the "
            "checkpoint stores the weights (a Hugging Face quantization_config), else bf16."
        ),
        json_schema_extra={
            "type": "string",
            "anyOf": [
                {"enum": list(DTYPES)},
                {"pattern": FORMAT_PATTERN},
            ],
            "examples": ["bf16", "nf4", "gptq-int4:g128", "gguf:Q4_K_M"],
        },
    )

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return check_weight_dtype(value)
        except UsageError as exc:
            raise ValueError(str(exc)) from None


class ConfigFile(ModelSpec):
    """The whole costcalc config format: metadata, the model and its budget."""

    schema_url: str | None = Field(
        default=None,
        alias="$schema",
        description="The JSON Schema this file follows, for editors (costcalc does not read it).",
    )
    name: str | None = Field(default=None, description="Short name shown in reports.")
    description: str | None = Field(default=None, description="One line about the model.")
    source: str | None = Field(default=None, description="Where the numbers come from.")
    budget: Budget | None = Field(default=None, description="Limits for `costcalc check`.")


SCHEMA_DIALECT = "http://json-schema.org/draft-04/schema#"
"""Draft 4: the dialect whose ``integer`` is costcalc's (``256.0`` is not one; from draft 6 on it
is), read by every editor and validator."""


class DeferredJsonSchema(GenerateJsonSchema):
    """pydantic's JSON schema, with each field whose nested model is built on first use
    (:class:`costcalc.blocks.Deferred`) written as pydantic writes a nested model's: the
    model's own schema under ``$defs``, its ``$ref`` in the field, no title of the field's."""

    def function_plain_schema(self, schema: core_schema.PlainValidatorFunctionSchema) -> Any:
        load = schema.get("metadata", {}).get(DEFERRED)
        if load is None:
            return super().function_plain_schema(schema)
        model = load()
        model.model_rebuild()
        return self.generate_inner(model.__pydantic_core_schema__)

    def field_title_should_be_set(self, schema: Any) -> bool:
        if schema.get("type") == "function-plain" and DEFERRED in schema.get("metadata", {}):
            return False  # a nested model has a title of its own
        return super().field_title_should_be_set(schema)


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 4) of costcalc's config format."""
    schema = ConfigFile.model_json_schema(schema_generator=DeferredJsonSchema)
    # n_layers may be left out when layers gives every layer.
    schema["required"] = [key for key in schema["required"] if key != "n_layers"]
    definitions = schema.pop("$defs", {})
    converted: dict[str, Any] = _draft4(
        {
            "$schema": SCHEMA_DIALECT,
            **schema,
            "anyOf": [{"required": ["n_layers"]}, {"required": ["layers"]}],
            "dependencies": {
                first: {"anyOf": [_null(first), _given(second)]}
                for first, second in BOTH_OR_NEITHER
            },
            "title": "costcalc model config",
            "definitions": definitions,
        }
    )
    return converted


BOTH_OR_NEITHER = (("moe_experts", "moe_top_k"), ("moe_top_k", "moe_experts"))
"""Fields the schema asks for together, as draft 4 can (``dependencies``): a mixture of experts
needs both its expert count and its top-k (``costcalc.spec``'s rule; null is not given)."""


def _null(field: str) -> dict[str, Any]:
    return {"properties": {field: {"type": "null"}}}


def _given(field: str) -> dict[str, Any]:
    return {"required": [field], "properties": {field: {"not": {"type": "null"}}}}


def _draft4(node: Any) -> Any:
    """``node`` with pydantic's ``#/$defs/`` references pointed at draft 4's ``definitions``."""
    if isinstance(node, dict):
        return {
            key: value.replace("#/$defs/", "#/definitions/") if key == "$ref" else _draft4(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_draft4(item) for item in node]
    return node


SPEC_FIELDS: tuple[str, ...] = tuple(ModelSpec.model_fields)
CONFIG_FIELDS: tuple[str, ...] = tuple(
    info.alias or name for name, info in ConfigFile.model_fields.items()
)


def problems_from(
    exc: ValidationError,
    doc: Document | None,
    overrides: Mapping[str, Any],
    known: tuple[str, ...],
    key_names: Mapping[str, str] | None = None,
    data: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """One :class:`Problem` per pydantic error: field path, line where known, what was expected.

    Given the ``data`` that failed, the structural rules that read only valid fields run too,
    so a file hears about all its problems at once.
    """
    names = key_names or {}
    yaml_text = doc is not None and not doc.path.lower().endswith(".json")
    errors = [e for e in exc.errors(include_url=False) if not _items_failed(e, exc)]
    structure: list[tuple[str, str]] = []
    problems: list[Problem] = []
    for error in errors:
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, StructureError):
            structure += cause.problems
            continue
        loc = tuple(str(part) for part in error["loc"])
        message = _message(error, loc, known, yaml_text)
        problems.append(_problem(loc, message, doc, overrides, names))
    if not structure and data is not None:
        structure = _structure_of_valid_fields(data, {str(e["loc"][0]) for e in errors if e["loc"]})
    problems += [_problem((field,), message, doc, overrides, names) for field, message in structure]
    return list(dict.fromkeys(problems))  # several fields read from one key fail once


def _items_failed(error: Any, exc: ValidationError) -> bool:
    """``error`` says a list is too short only because items of it failed (each reported)."""
    loc = error["loc"]
    return error["type"] == "too_short" and any(
        other["loc"][: len(loc)] == loc and len(other["loc"]) > len(loc) for other in exc.errors()
    )


def _structure_of_valid_fields(data: Mapping[str, Any], invalid: set[str]) -> list[tuple[str, str]]:
    """The structural rules broken by the fields that passed validation on their own."""
    # Layer groups are checked run by run only once the whole model validates; until then the
    # model's own block keys, which the groups override, are no block to check.
    if "layers" in data:
        return []
    usable = [
        name
        for name, info in ModelSpec.model_fields.items()
        if name not in invalid and name != "layers" and (name in data or not info.is_required())
    ]
    spec = ModelSpec.model_construct(**{name: data[name] for name in usable if name in data})
    return structural_problems(spec, usable)


def _problem(
    loc: KeyPath,
    message: str,
    doc: Document | None,
    overrides: Mapping[str, Any],
    names: Mapping[str, str],
) -> Problem:
    if loc and loc[0] in overrides:
        if in_api():  # load(..., n_heads=5): the override is a keyword argument
            return Problem(f"{loc[0]} (override)", message)
        option = OVERRIDE_OPTIONS.get(loc[0], loc[0])
        return Problem(f"{option} (command line)", _in_option_terms(message))
    if overrides and doc is not None and doc.path.startswith("preset "):
        # A preset the user never opened, made invalid by an option they typed: speak of options.
        if in_api():
            return Problem(f"{loc[0] if loc else ''} (the preset's value)", message)
        option = OVERRIDE_OPTIONS.get(loc[0], loc[0]) if loc else ""
        return Problem(f"{option} (the preset's value)", _in_option_terms(message))
    file_loc = (*names.get(loc[0], loc[0]).split("."), *loc[1:]) if loc else loc
    line = doc.line_of(file_loc) if doc is not None else None
    field = ".".join(file_loc) or ("''" if file_loc else "")  # an empty key is still a key
    return Problem(field, _in_file_terms(message, names), line)


def _in_option_terms(message: str) -> str:
    """``message`` with spec fields named by their options, and suggested head counts given as
    the options to type: ``try --heads 10 or --heads 20, or give --head-dim``."""
    message = re.sub(
        r"nearest valid head counts: ([\d,]+(?:, [\d,]+)*); or give head_dim explicitly",
        lambda m: (
            "try "
            + " or ".join(f"--heads {n}" for n in m.group(1).split(", "))
            + ", or give --head-dim"
        ),
        message,
    )
    for field, option in OVERRIDE_OPTIONS.items():
        message = re.sub(rf"\b{field}\b", option.split("/")[0], message)
    return message


def _in_file_terms(message: str, names: Mapping[str, str]) -> str:
    """``message`` with each spec field name replaced by the file's own key for it."""
    for field, key in names.items():
        message = re.sub(rf"\b{field}\b", key, message)
    return message


def _message(error: Any, loc: KeyPath, known: tuple[str, ...], yaml_text: bool) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        if loc[0] == "layers":
            return _unknown_group_key(loc[-1], known)
        return unknown_key_message(loc[-1], Budget.model_fields if loc[0] == "budget" else known)
    if kind == "missing":
        field = ConfigFile.model_fields.get(loc[0]) if loc else None
        what = f" ({field.description})" if field is not None and field.description else ""
        return f"required{what}"
    value = error.get("input")
    if isinstance(value, str) and (interpolation := INTERPOLATION.search(value)):
        return (
            f"{interpolation.group()} is an unresolved interpolation; costcalc reads values as "
            "written: resolve the config first (OmegaConf.to_yaml(cfg, resolve=True)) or write "
            "the value"
        )
    if kind == "bool_type" and yaml_text and str(value).lower() in YAML11_BOOLEANS:
        return (
            f"expected true or false; '{value}' is a boolean only in YAML 1.1, and costcalc "
            "reads YAML 1.2, where it is text"
        )
    shown = repr(value) if not isinstance(value, dict | list) else type(value).__name__
    if kind == "value_error":  # our own validators' messages already say what was given
        return str((error.get("ctx") or {}).get("error", error["msg"]))
    return f"{error['msg']} (got {shown})"


def _unknown_group_key(key: str, model_keys: tuple[str, ...]) -> str:
    """A key a layer group may not set: a key of the whole model (``vocab_size``), said so, or
    an unknown one, with the closest key a group takes."""
    from costcalc.blocks import BLOCK_FIELDS

    if key in model_keys:
        return (
            f"a key of the whole model, not of a layer group (a group sets count, pattern and "
            f"block keys); give {key} at the top level"
        )
    return unknown_key_message(key, ("count", "pattern", *BLOCK_FIELDS))


def unknown_key_message(key: str, known: Collection[str], what: str = "unknown key") -> str:
    """``what``, with a "did you mean" hint naming the closest of the ``known`` keys (never
    ``key`` itself)."""
    close = difflib.get_close_matches(key, [k for k in known if k != key], n=1, cutoff=0.6)
    return f"{what}; did you mean '{close[0]}'?" if close else what
