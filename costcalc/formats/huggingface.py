"""Hugging Face ``config.json`` files, recognised by ``model_type``.

Each family's translator (:mod:`costcalc.formats.hf_layernorm`,
:mod:`costcalc.formats.hf_rmsnorm`) reads the keys its ``transformers`` configuration class
defines, with that class's defaults, and states which tensors the modeling code builds. Keys the
count does not depend on are ignored; a missing key the count needs is an error naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from costcalc.errors import ConfigError, Problem
from costcalc.files import Document
from costcalc.formats import hf_layernorm, hf_rmsnorm
from costcalc.formats.hf_reader import Reader
from costcalc.loaders import Translation

FAMILIES: dict[str, Callable[[Reader], dict[str, Any]]] = {
    "gemma": hf_rmsnorm.gemma,
    "gpt2": hf_layernorm.gpt2,
    "gpt_neox": hf_layernorm.gpt_neox,
    "llama": hf_rmsnorm.llama,
    "mistral": hf_rmsnorm.mistral,
    "mixtral": hf_rmsnorm.mixtral,
    "openai-gpt": hf_layernorm.openai_gpt,
    "opt": hf_layernorm.opt,
    "phi": hf_layernorm.phi,
    "phi3": hf_rmsnorm.phi3,
    "qwen2": hf_rmsnorm.qwen2,
}
"""``model_type`` -> translator."""


def translate(doc: Document) -> Translation:
    """ModelSpec fields for a Hugging Face config, by its ``model_type``."""
    model_type = doc.data.get("model_type")
    family = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        supported = ", ".join(sorted(FAMILIES))
        raise ConfigError(
            doc.path,
            [
                Problem(
                    "model_type",
                    f"unsupported model_type {model_type!r}; supported: {supported}",
                    doc.line_of(("model_type",)),
                )
            ],
        )
    reader = Reader(doc)
    return reader.finish(family(reader))
