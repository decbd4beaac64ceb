"""Hugging Face families, one module each (or one for a few built alike).

A family module defines ``FAMILIES``: ``model_type`` -> a translator that reads the keys its
``transformers`` configuration class defines, with that class's defaults, and returns ModelSpec
fields for what the family's modeling code builds. Adding a family is adding a module here: the
registry finds it. A module may also define ``TEXT_LOCATIONS``: multimodal ``model_type`` -> the
key path of its text decoder's keys and that decoder's ``model_type``, for files that keep them
elsewhere than a ``text_config`` at the top level: at the top level itself (``()``, beside
``vision_config``; transformers moves them into ``text_config``) or deeper
(``("thinker_config", "text_config")``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import cache
from typing import Any

from costcalc.formats.hf_reader import Reader

Translator = Callable[[Reader], dict[str, Any]]


@cache
def registry() -> dict[str, Translator]:
    """Every family module's translators, by ``model_type``."""
    return _collected("FAMILIES")


@cache
def text_locations() -> dict[str, tuple[tuple[str, ...], str]]:
    """Every family module's ``TEXT_LOCATIONS``: multimodal ``model_type`` -> (key path of its
    text decoder's keys, that decoder's ``model_type``)."""
    return _collected("TEXT_LOCATIONS")


def _collected(name: str) -> dict[str, Any]:
    """The union of every family module's mapping ``name``."""
    found: dict[str, Any] = {}
    for module in pkgutil.iter_modules(__path__):
        family = importlib.import_module(f"{__name__}.{module.name}")
        found.update(getattr(family, name, {}))
    return found
