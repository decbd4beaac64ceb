"""CTRL (transformers 5.24, ``models/ctrl/modeling_ctrl.py``): a GPT-2-generation decoder with
sinusoidal positions and an LM head with a bias.

``transformer.w`` (V x D; its output scaled by sqrt(D), no parameters); ``pos_encoding``
(n_positions x D) is a sinusoidal buffer, not a parameter. Per block (``EncoderLayer``):
``layernorm1``, ``multi_head_attention.Wq``, ``Wk``, ``Wv``, ``dense`` (D x D + D each),
``layernorm2``, ``ffn.0`` (D x h + h, ReLU), ``ffn.2`` (h x D + D), LayerNorms with weight and
bias (pre-norm); a final ``transformer.layernorm``; ``lm_head`` (V x D) tied to ``w`` by default,
with its own bias (V). D = ``n_embd``, h = ``dff``, H = ``n_head``, d = D / H.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.layernorm import GPT_KEYS
from costcalc.formats.hf_reader import Reader
from costcalc.formats.peft_names import llama_names

CTRL_DEFAULTS: dict[str, int] = {
    "vocab_size": 246534,
    "d_model": 1280,
    "n_layers": 48,
    "n_heads": 16,
    "context_length": 256,
}
"""``CTRLConfig``'s defaults, read from GPT-2's keys (``n_embd``, ``n_layer``, ``n_head``,
``n_positions``) and their aliases."""


def ctrl(r: Reader) -> dict[str, Any]:
    """CTRLLMHeadModel, as above (defaults: V 246,534, D 1,280, h 8,192, 48 layers, 16 heads,
    256 positions; tied)."""
    fields = {
        field: r.value(field, *GPT_KEYS[field], default=default)
        for field, default in CTRL_DEFAULTS.items()
    }
    fields.update(
        position="sinusoidal",
        ffn_hidden=r.value("ffn_hidden", "dff", default=8192),
        fused_qkv=False,
        lm_head_bias=True,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    return fields


FAMILIES = {"ctrl": ctrl}


PEFT_NAMES = {
    "ctrl": llama_names(
        {"attn": "multi_head_attention", "mlp": "ffn"},
        {
            **{f"attn.{p}_proj": f"multi_head_attention.W{p}" for p in "qkv"},
            "attn.o_proj": "multi_head_attention.dense",
            "mlp.up_proj": "ffn.0",
            "mlp.down_proj": "ffn.2",
            "embed_tokens": "w",
        },
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
