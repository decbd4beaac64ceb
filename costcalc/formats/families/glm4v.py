"""Text decoders of GLM's vision-language models, read from a ``text_config`` (the vision tower
is not counted): GLM-4.1V (``glm4v_text``; the text model of ``glm4v``, ``glm46v`` and
``glmga``), GLM-OCR (``glm_ocr_text``), GLM-Image (``glm_image_text``) and GLM-4.5V
(``glm4v_moe_text``), as transformers 5.24 builds them (``models/<family>/modeling_<family>.py``:
the text model and the LM head of the ``ForConditionalGeneration`` class).

The first three are GLM-4's block (:func:`~costcalc.formats.families.glm4.glm4`):
``embed_tokens`` (V x D); per block ``q_proj`` (D x H d), ``k_proj``/``v_proj`` (D x K d),
``o_proj`` (H d x D, no bias), ``mlp.gate_up_proj`` (D x 2h) and ``mlp.down_proj`` (h x D, no
biases), four RMSNorms of D (``input_layernorm``, ``post_self_attn_layernorm``,
``post_attention_layernorm``, ``post_mlp_layernorm``); a final ``norm``; ``lm_head``. GLM-4.5V's
is GLM-4.5's (:func:`~costcalc.formats.families.moe.glm4_moe_layout`). Rotary positions cover
``partial_rotary_factor`` of each head (1 unless given, as the rotary embedding reads it; 0.5
for GLM-4.5V), split into the three M-RoPE sections, which hold no parameters.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.glm4 import glm4
from costcalc.formats.families.moe import glm4_moe_layout
from costcalc.formats.hf_reader import Reader
from costcalc.formats.peft_names import DEEPSEEK, LLAMA

GLM4V_SIZES: dict[str, Any] = {
    "vocab_size": 151_552,
    "d_model": 4096,
    "n_layers": 40,
    "n_heads": 32,
    "context_length": 32_768,
    "ffn_hidden": 13_696,
}
"""Glm4vTextConfig's defaults."""

GLM_OCR_SIZES: dict[str, Any] = {
    "vocab_size": 59_392,
    "d_model": 1024,
    "n_layers": 16,
    "n_heads": 16,
    "context_length": 131_072,
    "ffn_hidden": 4096,
}
"""GlmOcrTextConfig's defaults."""

GLM_IMAGE_SIZES: dict[str, Any] = {**GLM4V_SIZES, "vocab_size": 168_064, "context_length": 131_072}
"""GlmImageTextConfig's defaults."""

GLM4V_MOE_SIZES: dict[str, Any] = {
    "vocab_size": 151_424,
    "d_model": 4096,
    "n_layers": 46,
    "n_heads": 96,
    "context_length": 65_536,
    "ffn_hidden": 10_944,
}
"""Glm4vMoeTextConfig's defaults."""


def _glm4v_layout(r: Reader, sizes: dict[str, Any], kv_heads: int) -> dict[str, Any]:
    """GLM-4's block with a configuration class's sizes and ``num_key_value_heads`` default
    (null: as many as the heads); rotary on every dimension unless ``partial_rotary_factor``."""
    fields = glm4(r, head_dim=None, rotary=1.0, sizes=sizes)
    fields["n_kv_heads"] = r.nullable("n_kv_heads", "num_key_value_heads", kv_heads)
    return fields


def _fixed(r: Reader, fields: dict[str, Any], **values: Any) -> None:
    """Fields the modeling code fixes whatever the file says (the keys are not read)."""
    fields.update(values)
    r.forget(*values)


TEXT_TIE_FORWARDED = frozenset({"glm4v", "glm4v_moe", "glm_ocr"})
"""Wrappers whose configuration class also ties when only the ``text_config`` asks (transformers
forwards the key of files saved before version 5); ``glm46v`` and ``glmga`` read their own only."""


def wrapper_tie(
    r: Reader, fields: dict[str, Any], forwarded_by: frozenset[str] = TEXT_TIE_FORWARDED
) -> None:
    """Under a wrapper, the LM head is tied when the wrapper's ``tie_word_embeddings`` is true
    (default false) or, for the wrappers in ``forwarded_by``, the ``text_config``'s."""
    if not r.prefix:
        return
    wrapper, own = r.doc.data, fields["tie_embeddings"]
    if not isinstance(own, bool):
        return  # reported by the spec, under the text_config's key
    forwarded = own and wrapper.get("model_type") in forwarded_by
    fields["tie_embeddings"] = wrapper.get("tie_word_embeddings") is True or forwarded
    if not forwarded:
        r.key_names["tie_embeddings"] = "tie_word_embeddings"


def glm4v_text(r: Reader) -> dict[str, Any]:
    """Glm4vTextModel and Glm4vForConditionalGeneration's ``lm_head`` (GLM-4.1V-9B-Thinking;
    also GLM-4.6V and GLM-GA): the block above with a bias on q/k/v always (``attention_bias``
    is not read), heads D / H wide (``head_dim`` is not read), 2 key/value heads by default;
    untied by default."""
    fields = _glm4v_layout(r, GLM4V_SIZES, 2)
    _fixed(r, fields, head_dim=None, qkv_bias=True)
    wrapper_tie(r, fields)
    return fields


def glm_ocr_text(r: Reader) -> dict[str, Any]:
    """GlmOcrTextModel and GlmOcrForConditionalGeneration's ``lm_head`` (GLM-OCR): the block
    above without any bias (``attention_bias`` is not read), ``head_dim`` D / H unless given,
    8 key/value heads by default; untied by default."""
    fields = _glm4v_layout(r, GLM_OCR_SIZES, 8)
    _fixed(r, fields, qkv_bias=False)
    wrapper_tie(r, fields)
    return fields


def glm_image_text(r: Reader) -> dict[str, Any]:
    """GlmImageTextModel and GlmImageForConditionalGeneration's ``lm_head`` (GLM-Image's
    autoregressive generator): the block above with a bias on q/k/v when ``attention_bias``
    (default true), ``head_dim`` D / H unless given, 2 key/value heads by default; the LM head
    predicts image tokens: ``vision_vocab_size`` (16,512) x D, never tied."""
    fields = _glm4v_layout(r, GLM_IMAGE_SIZES, 2)
    _fixed(r, fields, tie_embeddings=False)
    fields["head_rows"] = r.value("head_rows", "vision_vocab_size", default=16_512)
    return fields


def glm4v_moe_text(r: Reader) -> dict[str, Any]:
    """Glm4vMoeTextModel and Glm4vMoeForConditionalGeneration's ``lm_head`` (GLM-4.5V):
    GLM-4.5's layout with Glm4vMoeTextConfig's defaults: 8 key/value heads, ``head_dim`` D / H
    unless given, q/k/v bias when ``attention_bias`` (default true), no query/key norms
    (``use_qk_norm`` is not read), rotary on ``partial_rotary_factor`` (0.5) of each head, 128
    experts of 1,408, top 8, one shared, one dense layer; untied by default."""
    fields = glm4_moe_layout(
        r, (8, None), None, 0.5, ((128, 8), 1408, 1, 1), bias=True, sizes=GLM4V_MOE_SIZES
    )
    wrapper_tie(r, fields)
    return fields


FAMILIES = {
    "glm4v_text": glm4v_text,
    "glm4v_moe_text": glm4v_moe_text,
    "glm_image_text": glm_image_text,
    "glm_ocr_text": glm_ocr_text,
}


PEFT_NAMES = {
    **dict.fromkeys(("glm4v_text", "glm_image_text", "glm_ocr_text"), LLAMA),
    "glm4v_moe_text": DEEPSEEK,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
