"""Text decoders of vision-language Hugging Face families built like families costcalc already
reads, each with its own configuration class's defaults (transformers 5.24,
``models/<family>/modeling_<family>.py``): Molmo2's (``molmo2_text``), Granite 4 Vision's
(``granite4_vision_text``), Granite Docling's (``granite_docling_text``), DeepSeek-OCR 2's
(``deepseek_ocr2_text``), Cosmos 3 Edge's (``cosmos3_edge_text``), Muse Glimmer's
(``muse_glimmer_text``) and Kosmos-2's (``kosmos_2_text_model``, XGLM's layout). Their files
sit under a ``text_config``; the vision parts are not counted.

All but Kosmos-2 build :func:`~costcalc.formats.families.llama.llama_layout`'s tensors:
``embed_tokens`` (V x D); per block ``input_layernorm``, ``post_attention_layernorm`` (RMSNorm,
D), ``q_proj`` (D x H d), ``k_proj``/``v_proj`` (D x K d), ``o_proj`` (H d x D); a final
``norm``; the conditional-generation model's ``lm_head`` (V x D). What differs is named per
family.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.fairseq_lm import fairseq_layout
from costcalc.formats.families.llama import llama, llama_layout, sliding_window
from costcalc.formats.families.llama_variants import arcee
from costcalc.formats.families.moe import (
    listed_sparse,
    mlp_bias_not_experts,
    routed_experts,
    shared_experts,
)
from costcalc.formats.hf_reader import (
    Reader,
    attention_bias,
    cross_attention,
    gate_without_bias,
    head_width,
    is_whole,
)
from costcalc.formats.peft_names import (
    DEEPSEEK_NAMES,
    ENCODER_ATTN,
    LLAMA,
    OPT_RENAMES,
    llama_names,
)

MOLMO2_SIZES: dict[str, Any] = {
    "vocab_size": 151_936,
    "d_model": 4096,
    "n_layers": 36,
    "n_heads": 32,
    "context_length": 36_864,
    "ffn_hidden": 12_288,
}
"""Molmo2TextConfig's defaults (Molmo2-8B's Qwen3 decoder)."""


def molmo2_text(r: Reader) -> dict[str, Any]:
    """The text decoder of Molmo2ForConditionalGeneration: the layout above with
    Molmo2TextConfig's defaults (8 key/value heads of 128), SwiGLU ``gate_proj``/``up_proj``/
    ``down_proj`` without biases, a bias on q/k/v (not ``o_proj``) when ``attention_bias`` (or its
    alias ``qkv_bias``), and
    ``q_norm``/``k_norm`` (RMSNorm) of head_dim when ``qk_norm_type`` is ``qwen3`` (the default)
    or over the whole projection (H d, K d) when ``olmo``. ``embed_tokens`` holds V +
    ``additional_vocab_size`` (128) rows, ``lm_head`` V rows and is never tied (the class
    declares no tied weights, whatever ``tie_word_embeddings`` says). ``norm_after`` moves the
    two norms after their sublayers and ``rope_scaling_layers`` picks the layers with scaled
    rotary positions: neither changes a count, but Molmo2TextConfig refuses a
    ``rope_scaling_layers`` that is not a list of layer indices (``list[int] | None``)."""
    fields = llama_layout(r, kv_heads=8, head_dim=128, sizes=MOLMO2_SIZES)
    scaled = r.data.get("rope_scaling_layers")
    if scaled is not None and not (isinstance(scaled, list) and all(map(is_whole, scaled))):
        r.fail(
            "rope_scaling_layers",
            f"expected a list of layer indices (got {scaled!r}): transformers refuses the file "
            "(Molmo2TextConfig types it as a list of ints)",
        )
    fields["qkv_bias"] = r.value("qkv_bias", "attention_bias", "qkv_bias", default=False)
    fields["attn_out_bias"] = False
    kind = r.value("qk_norm", "qk_norm_type", default="qwen3")
    if kind not in ("qwen3", "olmo"):
        r.fail("qk_norm_type", f"expected qwen3 or olmo (got {kind!r})")
    fields["qk_norm"] = "full" if kind == "olmo" else "head"
    r.forget("tie_embeddings")
    fields["tie_embeddings"] = False
    extra = r.value("vocab_size", "additional_vocab_size", default=128)
    vocab = fields["vocab_size"]
    if not is_whole(extra, 0):
        r.fail("additional_vocab_size", f"expected a whole number, 0 or more (got {extra!r})")
    elif is_whole(vocab, 1):
        r.key_names["vocab_size"] = r.name("vocab_size")
        r.key_names["head_rows"] = r.name("vocab_size")
        fields.update(vocab_size=vocab + extra, head_rows=vocab)
    return fields


GRANITE4_VISION_SIZES: dict[str, Any] = {
    "vocab_size": 32_000,
    "d_model": 4096,
    "n_layers": 32,
    "n_heads": 32,
    "context_length": 2048,
    "ffn_hidden": 11_008,
}
"""Granite4VisionTextConfig's defaults."""


def granite4_vision_text(r: Reader) -> dict[str, Any]:
    """The text decoder of Granite4VisionForConditionalGeneration: Granite's block (Llama's
    tensors: q/k/v/o bias when ``attention_bias``, gate/up/down bias when ``mlp_bias``; the
    multipliers hold no parameters) with Granite4VisionTextConfig's defaults (key/value heads =
    heads, untied). The deepstack features the vision tower adds to some layers' hidden states
    hold no text-decoder parameters."""
    return llama(r, sizes=GRANITE4_VISION_SIZES)


GRANITE_DOCLING_SIZES: dict[str, Any] = {
    "vocab_size": 133_800,
    "d_model": 1024,
    "n_layers": 28,
    "n_heads": 16,
    "context_length": 32_768,
    "ffn_hidden": 2048,
}
"""GraniteDoclingTextConfig's defaults (granite-docling's 28-layer decoder)."""


def granite_docling_text(r: Reader) -> dict[str, Any]:
    """The text decoder of GraniteDoclingForConditionalGeneration: Granite's block as above with
    GraniteDoclingTextConfig's defaults (4 key/value heads, tied embeddings)."""
    fields = llama(r, kv_heads=4, tie=True, sizes=GRANITE_DOCLING_SIZES)
    vision_width_matches(r, fields)
    return fields


def vision_width_matches(r: Reader, fields: dict[str, Any]) -> None:
    """Under GraniteDoclingConfig's ``text_config``: its ``validate_architecture``
    (transformers/models/granite_docling/configuration_granite_docling.py, line 187) refuses a
    text ``hidden_size`` other than the vision tower's ``out_hidden_size`` (default 1,024)."""
    if not r.prefix:
        return
    vision = r.doc.data.get("vision_config")
    width = vision.get("out_hidden_size") if isinstance(vision, dict) else None
    width = 1024 if width is None else width
    d = fields.get("d_model")
    if is_whole(d) and is_whole(width) and d != width:
        r.fail(
            "hidden_size",
            f"{d:,}, but vision_config.out_hidden_size is {width:,}: transformers refuses the "
            "file (GraniteDoclingConfig's validate_architecture: the two must be equal)",
        )


DEEPSEEK_OCR2_SIZES: dict[str, Any] = {
    "vocab_size": 102_400,
    "d_model": 4096,
    "n_layers": 32,
    "n_heads": 32,
    "context_length": 2048,
    "ffn_hidden": 11_008,
}
"""DeepseekOcr2TextConfig's defaults."""


def deepseek_ocr2_text(r: Reader) -> dict[str, Any]:
    """The text decoder of DeepseekOcr2ForConditionalGeneration: DeepSeek-V2's block with
    Llama's attention instead of MLA (q/k/v/o, bias when ``attention_bias``; key/value heads =
    heads unless given; d = D / H always: the class overwrites ``head_dim``), untied by default.
    Where ``mlp_layer_types`` says ``dense`` a SwiGLU ``mlp`` of ``intermediate_size``; where
    ``sparse``: ``mlp.gate`` (router X x D, no bias), ``mlp.experts`` (X SwiGLU experts of
    ``moe_intermediate_size``, 1,407, stacked) and ``mlp.shared_experts`` (one SwiGLU MLP of
    that width x ``n_shared_experts``, 2); X = ``n_routed_experts`` (64), top
    ``num_experts_per_tok``. ``mlp_layer_types`` and ``num_experts_per_tok`` have no usable
    default (the model cannot be built without them) and are required; ``mlp_bias`` biases the
    dense and shared MLPs, not the experts."""
    fields = llama_layout(r, sizes=DEEPSEEK_OCR2_SIZES)
    fields.pop("head_dim")
    r.forget("head_dim")
    attention_bias(r, fields)
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_experts"),
        ("num_experts_per_tok",),
        (64, None),
        (("moe_intermediate_size",), 1407),
    )
    shared_experts(r, moe, ("n_shared_experts",), 2)
    mlp_bias_not_experts(r, fields, moe)
    n = hf_layers.count_of(fields["n_layers"])
    if n is not None and r.size("layers", "mlp_layer_types") is not None:
        listed_sparse(r, fields, moe, 0, None)
    return fields


def cosmos3_edge_text(r: Reader) -> dict[str, Any]:
    """The text decoder of Cosmos3EdgeForConditionalGeneration: Arcee's block (the shared
    attention, q/k/v/o bias when ``attention_bias``; a plain MLP ``fc1`` (D x h) and ``fc2``
    (h x D), bias when ``mlp_bias``, activation ``hidden_act``, default relu2) with
    Cosmos3EdgeTextConfig's defaults (28 layers, hidden 2,048, 16 heads / 8 key-value of 128,
    intermediate 9,216, vocabulary 131,072). Cosmos3EdgeForConditionalGeneration declares no
    tied weights (``_tied_weights_keys = {}``): its ``lm_head`` is never tied, whatever
    ``tie_word_embeddings`` says. Its multimodal rotary sections change no count."""
    fields = arcee(r, kv_heads=8, head_dim=128, sizes=COSMOS3_EDGE_SIZES)
    fields["tie_embeddings"] = False
    r.forget("tie_embeddings")
    _cosmos3_edge_sections(r, fields)
    return fields


def _cosmos3_edge_sections(r: Reader, fields: dict[str, Any]) -> None:
    """Cosmos3EdgeTextConfig's ``validate_architecture`` refuses rotary sections
    (``rope_parameters.mrope_section``; with no rotary settings its default ``[24, 20, 20]``)
    that are not three summing to ``head_dim // 2`` (head_dim, else D // H)."""
    rope = r.data.get("rope_parameters")
    if rope is not None and not isinstance(rope, dict):
        return  # reported where the rotary settings are read
    sections: Any = [24, 20, 20] if rope is None else rope.get("mrope_section")
    head = head_width(fields)
    whole = isinstance(sections, list) and all(is_whole(s) for s in sections)
    if is_whole(head) and not (whole and len(sections) == 3 and sum(sections) == head // 2):
        where = "rope_parameters.mrope_section" if rope is not None else "head_dim"
        r.fail(
            where,
            f"rotary sections {sections} do not split the {head:,}-wide head: transformers "
            "refuses the file (Cosmos3EdgeTextConfig's validate_architecture wants three "
            f"summing to {head // 2:,})",
        )


COSMOS3_EDGE_SIZES: dict[str, Any] = {
    "vocab_size": 131_072,
    "d_model": 2048,
    "n_layers": 28,
    "n_heads": 16,
    "context_length": 131_072,
    "ffn_hidden": 9216,
}
"""Cosmos3EdgeTextConfig's defaults."""


KOSMOS2_KEYS: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size",),
    "d_model": ("embed_dim", "hidden_size"),
    "n_layers": ("layers", "num_hidden_layers"),
    "n_heads": ("attention_heads", "num_attention_heads"),
    "context_length": ("max_position_embeddings",),
}
"""Kosmos2TextConfig's keys; the second names are its ``attribute_map`` aliases."""

KOSMOS2_SIZES: dict[str, int] = {
    "vocab_size": 65_037,
    "d_model": 2048,
    "n_layers": 24,
    "n_heads": 32,
    "context_length": 2048,
}
"""Kosmos2TextConfig's defaults (microsoft/kosmos-2-patch14-224)."""


def kosmos_2_text(r: Reader) -> dict[str, Any]:
    """The text decoder of Kosmos2ForConditionalGeneration (``Kosmos2TextForCausalLM``): XGLM's
    layout (``embed_tokens`` V x D, sinusoidal positions: a buffer, no parameters; biased
    ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``, ``fc1``, ``fc2``; LayerNorms with weight and
    bias; a final ``layer_norm``; the head tied by default) with Kosmos2TextConfig's defaults
    (``ffn_dim`` 8,192) and Magneto's sub-LayerNorms: ``self_attn.inner_attn_ln`` (D) before
    ``out_proj``, so three norms of D per block, and ``ffn.ffn_layernorm`` (h) before ``fc2``.
    With ``add_cross_attention`` each block adds ``encoder_attn`` (q/k/v/out D x D, biased, no
    sub-LayerNorm) after ``encoder_attn_layer_norm``."""
    sizes = {f: r.value(f, *keys, default=KOSMOS2_SIZES[f]) for f, keys in KOSMOS2_KEYS.items()}
    fields = fairseq_layout(r, sizes, "ffn_dim", 8192)
    fields.update(position="sinusoidal", position_offset=2, norms_per_block=3, ffn_inner_norm=True)
    cross_attention(r, fields)
    return fields


MUSE_GLIMMER_SIZES: dict[str, Any] = {
    "vocab_size": 202_048,
    "d_model": 6656,
    "n_layers": 52,
    "n_heads": 32,
    "context_length": 131_072,
    "ffn_hidden": 19_968,
}
"""MuseGlimmerTextConfig's defaults."""


def _full_last_every_4th(n_layers: int) -> hf_layers.Layout:
    """MuseGlimmerTextConfig's rule: layer i attends fully when (L - 1 - i) % 4 == 0 (every 4th
    counted back from the last), within the window otherwise; a cycle of 4 from layer 0."""
    before = (n_layers - 1) % 4
    runs = [("sliding_attention", before), ("full_attention", 1), ("sliding_attention", 3 - before)]
    return hf_layers.Layout([(kind, count) for kind, count in runs if count], cycles=True)


def muse_glimmer_text(r: Reader) -> dict[str, Any]:
    """The text decoder of MuseGlimmerForConditionalGeneration: AFMoE's attention block without
    its experts, with MuseGlimmerTextConfig's defaults (2 key/value heads of 128): q/k/v/o
    with biases when ``attention_bias`` (the gate has none), a sigmoid output
    gate ``self_attn.gate_proj`` (D -> H d, no bias: costcalc's ``attention_gate_proj``), a
    query/key norm WITHOUT weights, four RMSNorms of D per
    block (``input_layernorm``, ``post_attention_layernorm``, ``pre_feedforward_layernorm``,
    ``post_feedforward_layernorm``), a SwiGLU ``mlp`` (activation ``hidden_activation``);
    ``embed_tokens`` with a weightless norm, a final ``norm`` of D; untied by default. Layers
    attend within ``sliding_window`` (2,048; null: none) but every 4th counted back from the
    last, unless ``layer_types`` lists them; ``layer_rope_theta`` (rotary or none per layer),
    the logit scale and softcap hold no parameters."""
    fields = llama_layout(
        r, kv_heads=2, head_dim=128, act_key="hidden_activation", sizes=MUSE_GLIMMER_SIZES
    )
    gate_without_bias(r, fields)
    fields.update(attention_gate=True, attention_gate_proj=True, norms_per_block=4)
    window = sliding_window(r, default=2048)
    hf_layers.attention_layers(r, fields, window, _full_last_every_4th)
    return fields


FAMILIES = {
    "cosmos3_edge_text": cosmos3_edge_text,
    "muse_glimmer_text": muse_glimmer_text,
    "kosmos_2_text_model": kosmos_2_text,
    "deepseek_ocr2_text": deepseek_ocr2_text,
    "granite4_vision_text": granite4_vision_text,
    "granite_docling_text": granite_docling_text,
    "molmo2_text": molmo2_text,
}


PEFT_NAMES = {
    "cosmos3_edge_text": llama_names(
        renames={"mlp.up_proj": "mlp.fc1", "mlp.down_proj": "mlp.fc2"}
    ),
    **dict.fromkeys(
        ("muse_glimmer_text", "granite4_vision_text", "granite_docling_text", "molmo2_text"), LLAMA
    ),
    "kosmos_2_text_model": llama_names(
        renames={
            **OPT_RENAMES,
            **ENCODER_ATTN,
            "mlp.up_proj": "ffn.fc1",
            "mlp.down_proj": "ffn.fc2",
        }
    ),
    "deepseek_ocr2_text": DEEPSEEK_NAMES,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
