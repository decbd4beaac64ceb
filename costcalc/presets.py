"""Model presets: costcalc-format YAML files shipped inside the package.

The files live in the top-level ``presets/`` folder of the source tree, which the wheel installs
as ``costcalc/presets``; an aliases file maps short names (``gpt2``) to preset names.
"""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from costcalc.errors import UnknownPresetError

ALIASES_FILE = "aliases.yaml"

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def preset_dir() -> Path:
    """The presets folder: inside the installed package, else the source tree's ``presets/``
    (read from disk, as pip installs the wheel: no import-system resource readers to load)."""
    packaged = Path(__file__).parent / "presets"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "presets"


@cache
def preset_names() -> tuple[str, ...]:
    """Every preset name, sorted."""
    return tuple(
        sorted(
            entry.name.removesuffix(".yaml")
            for entry in preset_dir().iterdir()
            if entry.name.endswith(".yaml") and entry.name != ALIASES_FILE
        )
    )


@cache
def aliases() -> dict[str, str]:
    """Short names for presets: alias -> preset name."""
    loaded = yaml.load(preset_dir().joinpath(ALIASES_FILE).read_text(encoding="utf-8"), _LOADER)
    return dict(loaded or {})


def resolve_preset(name: str) -> str:
    """The preset name behind ``name`` (an alias or a name), or an error with a suggestion."""
    key = name.strip().lower()
    key = aliases().get(key, key)
    if key in preset_names():
        return key
    known = [*preset_names(), *aliases()]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.5)
    raise UnknownPresetError(name, list(preset_names()), close[0] if close else None)


def preset_path(name: str) -> Path:
    """The file of preset ``name`` (alias allowed)."""
    return preset_dir().joinpath(f"{resolve_preset(name)}.yaml")


def preset_text(name: str) -> str:
    """The YAML text of preset ``name``: a valid ``--config`` file to start from."""
    return preset_path(name).read_text(encoding="utf-8")


def preset_data(name: str) -> dict[str, Any]:
    """The parsed YAML of preset ``name`` (a shipped file: no hardening of user files needed)."""
    loaded: dict[str, Any] = yaml.load(preset_text(name), Loader=_LOADER)
    return loaded


def rests_on_assumptions(source: str | None) -> bool:
    """Whether a preset's numbers are partly assumed: its ``source`` says which are, in words
    containing "assumed" (the course's lrn-gpt configs give no vocabulary or context)."""
    return "assumed" in (source or "").lower()
