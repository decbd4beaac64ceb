"""Hugging Face families of Qwen's vision-language text decoders: Qwen2-VL's
(``qwen2_vl_text``), Qwen2.5-VL's (``qwen2_5_vl_text``), Qwen3-VL's (``qwen3_vl_text``) and
Qwen3-VL-MoE's (``qwen3_vl_moe_text``) (transformers 5.24,
``models/<family>/modeling_<family>.py``): the ``model.language_model`` and ``lm_head`` of
``<Family>ForConditionalGeneration``; the vision tower and its merger are not counted.

Qwen2-VL and Qwen2.5-VL build Qwen2's decoder (:func:`~costcalc.formats.families.llama.qwen2`:
bias on q/k/v, none on ``o_proj``), Qwen3-VL Qwen3's
(:func:`~costcalc.formats.families.llama.qwen3_layout`: ``q_norm``/``k_norm`` of head_dim) with
full attention in every layer, Qwen3-VL-MoE Qwen3-MoE's sparse block
(:func:`~costcalc.formats.families.moe.qwen3_sparse`: ``mlp.gate`` X x D, ``mlp.experts``
``gate_up_proj`` X x 2h x D, ``down_proj`` X x D x h). Their multimodal rotary positions
(``mrope_section``) and Qwen3-VL's deepstack (visual features added to the first layers' hidden
states) hold no parameters. The LM head is tied to ``embed_tokens`` when the multimodal
config's ``tie_word_embeddings`` (top level, default false) is true; Qwen2-VL's and
Qwen2.5-VL's configs also take a true ``tie_word_embeddings`` from their ``text_config``.
Published Qwen2-VL and Qwen2.5-VL files keep the text keys at the top level
(``TEXT_AT_TOP_LEVEL``); their configuration classes move them into ``text_config``.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import qwen2, qwen3_layout
from costcalc.formats.families.moe import qwen3_sparse
from costcalc.formats.hf_reader import Reader

QWEN2_VL_SIZES: dict[str, Any] = {
    "vocab_size": 152_064,
    "d_model": 8192,
    "n_layers": 80,
    "n_heads": 64,
    "context_length": 32_768,
    "ffn_hidden": 29_568,
}
"""Qwen2VLTextConfig's and Qwen2_5_VLTextConfig's defaults (the 72B sizes)."""

QWEN3_VL_SIZES: dict[str, Any] = {
    "vocab_size": 151_936,
    "d_model": 4096,
    "n_layers": 32,
    "n_heads": 32,
    "context_length": 128_000,
    "ffn_hidden": 22_016,
}
"""Qwen3VLTextConfig's defaults."""

QWEN3_VL_MOE_SIZES: dict[str, Any] = {
    "vocab_size": 151_936,
    "d_model": 2048,
    "n_layers": 24,
    "n_heads": 16,
    "context_length": 128_000,
    "ffn_hidden": 5632,
}
"""Qwen3VLMoeTextConfig's defaults."""


def multimodal_tie(r: Reader, text_too: bool) -> Any:
    """Whether ``lm_head`` is tied: the file's top-level ``tie_word_embeddings`` (the multimodal
    config's, default false), or (``text_too``) a true ``text_config.tie_word_embeddings``."""
    if text_too and r.prefix and r.data.get("tie_word_embeddings") is True:
        r.key_names["tie_embeddings"] = r.name("tie_word_embeddings")
        return True
    r.key_names["tie_embeddings"] = "tie_word_embeddings"
    tie = r.doc.data.get("tie_word_embeddings")
    return False if tie is None else tie


def qwen2_vl_text(r: Reader) -> dict[str, Any]:
    """Qwen2-VL's and Qwen2.5-VL's text decoder: Qwen2's with their text configs' defaults
    (8 key/value heads, windows from layer ``max_window_layers`` 80 on with
    ``use_sliding_window``)."""
    fields = qwen2(r, kv_heads=8, max_window_layers=80, sizes=QWEN2_VL_SIZES)
    fields["tie_embeddings"] = multimodal_tie(r, text_too=True)
    return fields


def qwen3_vl_text(r: Reader) -> dict[str, Any]:
    """Qwen3-VL's text decoder: Qwen3's attention (32 key/value heads, ``head_dim`` 128 by
    default), a SwiGLU MLP, no windows."""
    fields = qwen3_layout(r, kv_heads=32, sizes=QWEN3_VL_SIZES)
    fields["tie_embeddings"] = multimodal_tie(r, text_too=False)
    return fields


def qwen3_vl_moe_text(r: Reader) -> dict[str, Any]:
    """Qwen3-VL-MoE's text decoder: Qwen3's attention (16 key/value heads, ``head_dim`` D / H
    unless given) and Qwen3-MoE's FFNs (``num_experts`` (or ``num_local_experts``) 60 experts
    of 1,408, top 4 by default); no windows."""
    fields = qwen3_layout(r, kv_heads=16, head_dim=None, sizes=QWEN3_VL_MOE_SIZES)
    qwen3_sparse(r, fields, ("num_experts", "num_local_experts"), (60, 4, 1408))
    fields["tie_embeddings"] = multimodal_tie(r, text_too=False)
    return fields


FAMILIES = {
    "qwen2_vl_text": qwen2_vl_text,
    "qwen2_5_vl_text": qwen2_vl_text,
    "qwen3_vl_text": qwen3_vl_text,
    "qwen3_vl_moe_text": qwen3_vl_moe_text,
}

TEXT_AT_TOP_LEVEL = {"qwen2_vl": "qwen2_vl_text", "qwen2_5_vl": "qwen2_5_vl_text"}
