"""Hugging Face families, one module each (or one for a few built alike).

A family module defines ``FAMILIES``: ``model_type`` -> a translator that reads the keys its
``transformers`` configuration class defines, with that class's defaults, and returns ModelSpec
fields for what the family's modeling code builds. Adding a family is adding a module here: the
registry finds it.
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
    families: dict[str, Translator] = {}
    for module in pkgutil.iter_modules(__path__):
        found = importlib.import_module(f"{__name__}.{module.name}")
        families.update(getattr(found, "FAMILIES", {}))
    return families
