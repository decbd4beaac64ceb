"""nanoGPT-style configs (``GPTConfig`` as JSON/YAML): vocab_size, block_size, n_layer, n_head,
n_embd, bias.

nanoGPT's model (karpathy/nanoGPT ``model.py``): learned token and position tables, LayerNorm and
a plain 4x MLP, ``bias`` switching every Linear and LayerNorm bias at once, no LM-head bias, and
the LM head tied to the token table. A ``tie_embeddings`` key (as lrn-gpt's ``GPTConfig`` has)
is honoured; without it the model is tied, as nanoGPT always is.
"""

from __future__ import annotations

from typing import Any

from costcalc.errors import ConfigError, Problem
from costcalc.files import Document
from costcalc.loaders import Translation

REQUIRED = {
    "vocab_size": "vocab_size",
    "block_size": "context_length",
    "n_layer": "n_layers",
    "n_head": "n_heads",
    "n_embd": "d_model",
}
KNOWN = {*REQUIRED, "bias", "dropout", "tie_embeddings", "mlp", "name", "description"}


def translate(doc: Document) -> Translation:
    """ModelSpec fields for a nanoGPT-style config."""
    data = doc.data
    missing = [key for key in REQUIRED if key not in data]
    unknown = sorted(set(data) - KNOWN)
    problems = [Problem(key, "required by a nanoGPT-style config") for key in missing]
    problems += [
        Problem(key, "unknown key in a nanoGPT-style config", doc.line_of((key,)))
        for key in unknown
    ]
    if problems:
        raise ConfigError(doc.path, problems)
    fields: dict[str, Any] = {spec_key: data[key] for key, spec_key in REQUIRED.items()}
    bias = data.get("bias", True)
    for key in ("qkv_bias", "attn_out_bias", "ffn_bias", "norm_bias"):
        fields[key] = bias
    fields["tie_embeddings"] = data.get("tie_embeddings", True)
    key_names = {spec_key: key for key, spec_key in REQUIRED.items()}
    key_names.update(
        qkv_bias="bias",
        attn_out_bias="bias",
        ffn_bias="bias",
        norm_bias="bias",
        tie_embeddings="tie_embeddings",
    )
    return Translation(
        fields, key_names, name=data.get("name"), description=data.get("description")
    )
