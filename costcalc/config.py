"""costcalc's own config format, and turning any config into a validated :class:`ModelSpec`.

A costcalc config (YAML or JSON) is flat: optional metadata (``name``, ``description``,
``source``), the :class:`ModelSpec` fields, and an optional ``budget:`` section. Unknown keys are
errors with a "did you mean" hint. Presets are files in this format.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from costcalc.errors import Problem
from costcalc.files import Document, KeyPath
from costcalc.spec import ModelSpec, StructureError

METADATA_KEYS = ("name", "description", "source")


class Budget(BaseModel):
    """Limits a config declares for itself (checked by ``costcalc check``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_params: int | str | None = Field(
        default=None, description="Most parameters allowed: a count like 124439808 or 30M."
    )
    max_weight_bytes: int | str | None = Field(
        default=None, description="Most weight bytes allowed: like 1GiB or 500MB."
    )
    dtype: str = Field(default="bf16", description="The dtype max_weight_bytes is measured in.")


class ConfigFile(ModelSpec):
    """The whole costcalc config format: metadata, the model and its budget."""

    name: str | None = Field(default=None, description="Short name shown in reports.")
    description: str | None = Field(default=None, description="One line about the model.")
    source: str | None = Field(default=None, description="Where the numbers come from.")
    budget: Budget | None = Field(default=None, description="Limits for `costcalc check`.")


SPEC_FIELDS: tuple[str, ...] = tuple(ModelSpec.model_fields)
CONFIG_FIELDS: tuple[str, ...] = tuple(ConfigFile.model_fields)


def problems_from(
    exc: ValidationError,
    doc: Document | None,
    overrides: Mapping[str, Any],
    known: tuple[str, ...],
    key_names: Mapping[str, str] | None = None,
) -> list[Problem]:
    """One :class:`Problem` per pydantic error: field path, line where known, what was expected."""
    names = key_names or {}
    problems: list[Problem] = []
    for error in exc.errors(include_url=False):
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, StructureError):
            for field, message in cause.problems:
                problems.append(_problem((field,), message, doc, overrides, names))
            continue
        loc = tuple(str(part) for part in error["loc"])
        problems.append(_problem(loc, _message(error, loc, known), doc, overrides, names))
    return problems


def _problem(
    loc: KeyPath,
    message: str,
    doc: Document | None,
    overrides: Mapping[str, Any],
    names: Mapping[str, str],
) -> Problem:
    if loc and loc[0] in overrides:
        return Problem(f"--{loc[0]} (command line)", message)
    file_loc = (names.get(loc[0], loc[0]), *loc[1:]) if loc else loc
    line = doc.line_of(file_loc) if doc is not None else None
    return Problem(".".join(file_loc), _in_file_terms(message, names), line)


def _in_file_terms(message: str, names: Mapping[str, str]) -> str:
    """``message`` with each spec field name replaced by the file's own key for it."""
    for field, key in names.items():
        message = re.sub(rf"\b{field}\b", key, message)
    return message


def _message(error: Any, loc: KeyPath, known: tuple[str, ...]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return f"unknown key{hint}"
    if kind == "missing":
        field = ConfigFile.model_fields.get(loc[0]) if loc else None
        what = f" ({field.description})" if field is not None and field.description else ""
        return f"required{what}"
    value = error.get("input")
    shown = repr(value) if not isinstance(value, dict | list) else type(value).__name__
    return f"{error['msg']} (got {shown})"
