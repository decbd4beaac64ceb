"""nanoGPT-style configs (``GPTConfig`` as JSON/YAML): vocab_size, block_size, n_layer, n_head,
n_embd, dropout, bias.

nanoGPT's model (karpathy/nanoGPT ``model.py``): learned token and position tables, LayerNorm and
a plain 4x MLP, ``bias`` switching every Linear and LayerNorm bias at once, no LM-head bias, and
the LM head tied to the token table. A ``tie_embeddings`` key (as lrn-gpt's ``GPTConfig`` has)
is honoured; without it the model is tied, as nanoGPT always is.

Every problem is collected: unknown keys (with a hint), a dropout outside [0, 1), and whatever
validating the sizes finds, named by the file's own keys.
"""

from __future__ import annotations

from typing import Any

from costcalc.config import unknown_key_message
from costcalc.errors import Problem
from costcalc.files import Document
from costcalc.formats.translation import Translation

SIZES = {
    "vocab_size": "vocab_size",
    "block_size": "context_length",
    "n_layer": "n_layers",
    "n_head": "n_heads",
    "n_embd": "d_model",
}
"""nanoGPT key -> ModelSpec field."""

BIASES = ("qkv_bias", "attn_out_bias", "ffn_bias", "norm_bias")
"""The ModelSpec fields nanoGPT's one ``bias`` flag sets."""

KNOWN = (*SIZES, "bias", "dropout", "tie_embeddings", "mlp", "name", "description")


def translate(doc: Document) -> Translation:
    """ModelSpec fields for a nanoGPT-style config."""
    data = doc.data
    fields: dict[str, Any] = {spec: data[key] for key, spec in SIZES.items() if key in data}
    key_names = {spec: key for key, spec in SIZES.items()}
    bias = data.get("bias", True)
    for spec_field in BIASES:
        fields[spec_field] = bias
        key_names[spec_field] = "bias"
    fields["tie_embeddings"] = data.get("tie_embeddings", True)
    problems = [
        Problem(
            str(key),
            unknown_key_message(str(key), KNOWN, "unknown key in a nanoGPT-style config"),
            doc.line_of((str(key),)),
        )
        for key in data
        if key not in KNOWN
    ]
    dropout = data.get("dropout", 0.0)
    if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout < 1:
        problems.append(
            Problem(
                "dropout", f"a probability in [0, 1) (got {dropout!r})", doc.line_of(("dropout",))
            )
        )
    name, description = data.get("name"), data.get("description")
    return Translation(
        fields,
        key_names,
        name=name if isinstance(name, str) else None,
        description=description if isinstance(description, str) else None,
        problems=problems,
    )
