"""Hugging Face ``config.json`` files, recognised by ``model_type``.

Each family's translator reads the keys its ``transformers`` configuration class defines and
states which tensors the modeling code builds. Keys the count does not depend on are ignored; a
missing key the count needs is an error naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from costcalc.errors import ConfigError, Problem
from costcalc.files import Document
from costcalc.loaders import Translation


class _Reader:
    """Reads keys of one config, collecting every missing one before failing."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.key_names: dict[str, str] = {}
        self.missing: list[str] = []

    def get(self, field: str, *keys: str, default: Any = None, required: bool = True) -> Any:
        """The first of ``keys`` present in the file, recorded as the source of ``field``."""
        for key in keys:
            if key in self.doc.data:
                self.key_names[field] = key
                return self.doc.data[key]
        if required and default is None:
            self.missing.append(" or ".join(keys))
        return default

    def finish(self, fields: dict[str, Any]) -> Translation:
        if self.missing:
            problems = [Problem(key, "required key is missing") for key in self.missing]
            raise ConfigError(self.doc.path, problems)
        name = self.doc.data.get("_name_or_path")
        return Translation(fields, self.key_names, name=name if isinstance(name, str) else None)


def _gpt2(r: _Reader) -> dict[str, Any]:
    """GPT2LMHeadModel: wte, wpe, per block ln_1, c_attn (D x 3D + 3D), c_proj, ln_2, MLP
    c_fc/c_proj with biases, final ln_f, LM head tied to wte without bias."""
    inner = r.get("ffn_hidden", "n_inner", required=False)
    fields = {
        "vocab_size": r.get("vocab_size", "vocab_size"),
        "context_length": r.get("context_length", "n_positions"),
        "d_model": r.get("d_model", "n_embd"),
        "n_layers": r.get("n_layers", "n_layer"),
        "n_heads": r.get("n_heads", "n_head"),
        "tie_embeddings": r.get("tie_embeddings", "tie_word_embeddings", default=True),
    }
    if inner is not None:
        fields["ffn_hidden"] = inner
    return fields


FAMILIES: dict[str, Callable[[_Reader], dict[str, Any]]] = {
    "gpt2": _gpt2,
}


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
    reader = _Reader(doc)
    return reader.finish(family(reader))
