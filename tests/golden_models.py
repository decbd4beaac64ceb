"""Golden data from transformers/PyTorch, and the spec costcalc reads from each model's config.

hf_reference.json (published configs) and hf_reference_extra.json (each family's minimal config,
left to its defaults) are written by tests/reference/make_golden.py and make_golden_defaults.py;
memory_reference.json by tests/reference/make_memory_reference.py (torch 2.13.0 CPU,
transformers 5.24.0; each file records its versions). Every record names the config it was built
from, which costcalc reads with its own Hugging Face translators.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from costcalc.loaders import load_file
from costcalc.spec import ModelSpec
from tests.conftest import GOLDEN, ROOT


@cache
def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / name).read_text())
    return data


def hf_models() -> dict[str, dict[str, Any]]:
    """Published models, by fixture name."""
    models: dict[str, dict[str, Any]] = _load("hf_reference.json")["models"]
    return models


def every_model() -> dict[str, dict[str, Any]]:
    """Published models, plus each family's minimal config as ``defaults/<family>``."""
    extra = _load("hf_reference_extra.json")["models"]
    return {**hf_models(), **{f"defaults/{family}": r for family, r in extra.items()}}


def memory_reference() -> dict[str, Any]:
    return _load("memory_reference.json")


def golden(name: str) -> dict[str, Any]:
    return every_model()[name]


def golden_spec(name: str) -> ModelSpec:
    """The spec costcalc reads from the config the golden record was generated from."""
    return load_file(ROOT / golden(name)["config"]).spec


KV_MODELS = sorted(name for name, r in hf_models().items() if r.get("kv_cache_elements"))
"""Models whose forward with use_cache=True returned a cache (GPT-1 keeps none)."""
