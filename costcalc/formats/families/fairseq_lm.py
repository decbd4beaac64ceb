"""Decoders ported from fairseq, built like OPT: XGLM and BioGPT. ``embed_tokens`` (V x D, its
scale holds no parameters); per block ``self_attn.q_proj``, ``k_proj``, ``v_proj``, ``out_proj``
(D x D + D each), ``self_attn_layer_norm``, ``fc1`` (D x h + h), ``fc2`` (h x D + D),
``final_layer_norm`` (LayerNorms with weight and bias); a final ``layer_norm``; an LM head
(V x D, no bias) tied to the token table by default (transformers 5.24,
``models/xglm/modeling_xglm.py``, ``models/biogpt/modeling_biogpt.py``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.hf_reader import Reader, cross_attention, standard_sizes
from costcalc.formats.peft_names import ENCODER_ATTN, OPT_RENAMES, llama_names

XGLM_KEYS: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size",),
    "d_model": ("d_model", "hidden_size"),
    "n_layers": ("num_layers", "num_hidden_layers"),
    "n_heads": ("attention_heads", "num_attention_heads"),
    "context_length": ("max_position_embeddings",),
}
"""XGLM's keys; the second names are its ``attribute_map`` aliases."""


def fairseq_layout(
    r: Reader, fields: dict[str, Any], ffn_key: str, ffn_default: int | None = None
) -> dict[str, Any]:
    """The shared layout: separate biased q/k/v/out, a biased plain MLP of ``ffn_key``'s width
    (required unless the family has a default), tied by default."""
    fields.update(
        ffn_hidden=(
            r.size("ffn_hidden", ffn_key)
            if ffn_default is None
            else r.value("ffn_hidden", ffn_key, default=ffn_default)
        ),
        fused_qkv=False,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    return fields


def xglm(r: Reader) -> dict[str, Any]:
    """XGLMForCausalLM: the layout above with sinusoidal positions (a buffer of
    (max_position_embeddings + 2) x D, no parameters) and ``ffn_dim`` as h; with
    ``add_cross_attention`` each block adds ``encoder_attn`` (``q_proj``, ``k_proj``,
    ``v_proj``, ``out_proj``, D x D, biased) after ``encoder_attn_layer_norm``."""
    fields = fairseq_layout(r, standard_sizes(r, XGLM_KEYS), "ffn_dim")
    fields.update(position="sinusoidal", position_offset=2)
    cross_attention(r, fields)
    return fields


def biogpt(r: Reader) -> dict[str, Any]:
    """BioGptForCausalLM: the layout above with a learned ``embed_positions`` table of
    (max_position_embeddings + 2) x D (the offset of 2 fairseq keeps) and ``intermediate_size``
    as h; the head is ``output_projection``."""
    fields = fairseq_layout(r, standard_sizes(r), "intermediate_size")
    fields["position_offset"] = 2
    return fields


FAMILIES = {"biogpt": biogpt, "xglm": xglm}


PEFT_NAMES = {
    "biogpt": llama_names(renames={**OPT_RENAMES, "lm_head": "output_projection"}),
    "xglm": llama_names(renames={**OPT_RENAMES, **ENCODER_ATTN}),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
