"""Hugging Face families of Qwen's multimodal text decoders: Qwen2-VL's (``qwen2_vl_text``),
Qwen2.5-VL's (``qwen2_5_vl_text``), Qwen3-VL's (``qwen3_vl_text``), Qwen3-VL-MoE's
(``qwen3_vl_moe_text``), and the thinkers' of Qwen2.5-Omni (``qwen2_5_omni_text``) and
Qwen3-Omni (``qwen3_omni_moe_text``) (transformers 5.24, ``models/<family>/modeling_<family>.py``):
the ``model.language_model`` and ``lm_head`` of ``<Family>ForConditionalGeneration`` (of the
thinker for Omni); the vision tower and merger, the audio encoder and the Omni talker and
token2wav are not counted.

Qwen2-VL, Qwen2.5-VL and Qwen2.5-Omni build Qwen2's decoder
(:func:`~costcalc.formats.families.llama.qwen2`: bias on q/k/v, none on ``o_proj``); Qwen3-VL
Qwen3's (:func:`~costcalc.formats.families.llama.qwen3_layout`: ``q_norm``/``k_norm`` of
head_dim) with full attention in every layer; Qwen3-VL-MoE and Qwen3-Omni that attention with
Qwen3-MoE's sparse block (:func:`~costcalc.formats.families.moe.qwen3_sparse`: ``mlp.gate``
X x D, ``mlp.experts`` ``gate_up_proj`` X x 2h x D, ``down_proj`` X x D x h). Their multimodal
rotary positions (``mrope_section``) and Qwen3-VL's deepstack (visual features added to the
first layers' hidden states) hold no parameters. The LM head is tied to ``embed_tokens`` when
the config holding the ``text_config`` (the multimodal config; Omni's ``thinker_config``) says
``tie_word_embeddings`` (default false); Qwen2-VL's and Qwen2.5-VL's configs also take a true
``tie_word_embeddings`` from their ``text_config``. Published Qwen2-VL and Qwen2.5-VL files keep
the text keys at the top level, Omni files under ``thinker_config.text_config``
(``TEXT_LOCATIONS``).
"""

from __future__ import annotations

from typing import Any

from costcalc.errors import Problem
from costcalc.formats.families.llama import qwen2, qwen3_layout, sliding_window
from costcalc.formats.families.moe import qwen3_sparse
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import LLAMA, QWEN2_MOE

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

QWEN2_5_OMNI_SIZES: dict[str, Any] = {
    "vocab_size": 152_064,
    "d_model": 3584,
    "n_layers": 28,
    "n_heads": 28,
    "context_length": 32_768,
    "ffn_hidden": 18_944,
}
"""Qwen2_5OmniTextConfig's defaults (the 7B sizes)."""

QWEN3_OMNI_SIZES: dict[str, Any] = {
    "vocab_size": 3584,
    "d_model": 2048,
    "n_layers": 28,
    "n_heads": 28,
    "context_length": 32_768,
    "ffn_hidden": 18_944,
}
"""Qwen3OmniMoeTextConfig's defaults, as the class writes them."""


def holder_tie(r: Reader, text_too: bool) -> Any:
    """Whether ``lm_head`` is tied: ``tie_word_embeddings`` of the config holding the text keys
    (the file's top level, or Omni's ``thinker_config``; default false), or (``text_too``) a
    true ``text_config.tie_word_embeddings``."""
    if text_too and r.prefix and r.data.get("tie_word_embeddings") is True:
        r.key_names["tie_embeddings"] = r.name("tie_word_embeddings")
        return True
    holder = r.prefix[:-1]
    data = r.doc.data
    for key in holder:
        data = data[key]
    key = ".".join((*holder, "tie_word_embeddings"))
    r.key_names["tie_embeddings"] = key
    tie = data.get("tie_word_embeddings")
    wrapper = bool(r.prefix) or r.doc.data.get("model_type") in TEXT_LOCATIONS
    if wrapper and "tie_word_embeddings" in data and tie is None:
        r.problems.append(
            Problem(
                key,
                "null, but the configuration holding the text keys takes true or false here "
                "(its tie_word_embeddings is a bool): transformers refuses the file",
                r.doc.line_of((*holder, "tie_word_embeddings")),
            )
        )
    return False if tie is None else tie


def qwen2_vl_text(r: Reader) -> dict[str, Any]:
    """Qwen2-VL's and Qwen2.5-VL's text decoder: Qwen2's with their text configs' defaults
    (8 key/value heads, windows of 4,096 from layer ``max_window_layers`` 80 on with
    ``use_sliding_window``). A width its heads do not divide is refused: Qwen2VLAttention and
    Qwen2_5_VLAttention raise a ValueError for one."""
    fields = qwen2(r, kv_heads=8, windows=(4096, 80), sizes=QWEN2_VL_SIZES)
    fields["tie_embeddings"] = holder_tie(r, text_too=True)
    d, h = fields.get("d_model"), fields.get("n_heads")
    if is_whole(d, 1) and is_whole(h, 1) and d % h:
        r.fail(
            r.spelling("num_attention_heads"),
            f"hidden_size {d:,} does not split into {h:,} equal heads: transformers fails to "
            "build the model (its text attention takes head_dim = hidden_size // heads and "
            "raises a ValueError unless they divide, whatever head_dim says)",
        )
    return fields


def qwen2_5_omni_text(r: Reader) -> dict[str, Any]:
    """Qwen2.5-Omni's thinker text decoder: Qwen2's with Qwen2_5OmniTextConfig's defaults (4
    key/value heads, windows of 32,768 from layer ``max_window_layers`` 28 on with
    ``use_sliding_window``); tied by the thinker config only."""
    fields = qwen2(r, kv_heads=4, windows=(32_768, 28), sizes=QWEN2_5_OMNI_SIZES)
    fields["tie_embeddings"] = holder_tie(r, text_too=False)
    return fields


def qwen3_vl_text(r: Reader) -> dict[str, Any]:
    """Qwen3-VL's text decoder: Qwen3's attention (32 key/value heads, ``head_dim`` 128 by
    default), a SwiGLU MLP, no windows."""
    fields = qwen3_layout(r, kv_heads=32, sizes=QWEN3_VL_SIZES)
    fields["tie_embeddings"] = holder_tie(r, text_too=False)
    return fields


def qwen3_vl_moe_text(r: Reader) -> dict[str, Any]:
    """Qwen3-VL-MoE's text decoder: Qwen3's attention (16 key/value heads, ``head_dim`` D / H
    unless given) and Qwen3-MoE's FFNs (``num_experts`` (or ``num_local_experts``) 60 experts
    of 1,408, top 4 by default); no windows."""
    fields = qwen3_layout(r, kv_heads=16, head_dim=None, sizes=QWEN3_VL_MOE_SIZES)
    qwen3_sparse(r, fields, ("num_experts", "num_local_experts"), (60, 4, 1408))
    fields["tie_embeddings"] = holder_tie(r, text_too=False)
    return fields


def qwen3_omni_moe_text(r: Reader) -> dict[str, Any]:
    """Qwen3-Omni's thinker text decoder: Qwen3's attention (4 key/value heads, ``head_dim``
    D / H unless given) and Qwen3-MoE's FFNs (128 experts of 768, top 8 by default); tied by
    the thinker config only. Its attention masks no window (``self.sliding_window = None``),
    but a ``sliding_window`` (none by default) windows every layer's cache: ``DynamicCache``
    makes a ``DynamicSlidingWindowLayer`` of each layer of a config with a window and no
    ``layer_types`` (``cache_utils.get_layer_types_and_kwargs``), so a decoding step attends
    to the window's keys alone; costcalc reads it as a window on every layer (a prefill then
    counts the windowed pairs, as under a window's mask)."""
    fields = qwen3_layout(r, kv_heads=4, head_dim=None, sizes=QWEN3_OMNI_SIZES)
    window = sliding_window(r, default=None)
    if window is not None:
        fields["sliding_window"] = window
        r.note(
            "sliding_window: transformers' attention masks no window here, but its DynamicCache "
            "keeps each layer's last tokens within it, so decoding attends within the window; "
            "costcalc counts the window in the cache and in every attention."
        )
    qwen3_sparse(r, fields, ("num_experts",), (128, 8, 768))
    fields["tie_embeddings"] = holder_tie(r, text_too=False)
    return fields


FAMILIES = {
    "qwen2_vl_text": qwen2_vl_text,
    "qwen2_5_vl_text": qwen2_vl_text,
    "qwen3_vl_text": qwen3_vl_text,
    "qwen3_vl_moe_text": qwen3_vl_moe_text,
    "qwen2_5_omni_text": qwen2_5_omni_text,
    "qwen3_omni_moe_text": qwen3_omni_moe_text,
}


PEFT_NAMES = {
    **dict.fromkeys(
        (
            "qwen2_vl_text",
            "qwen2_5_vl_text",
            "qwen3_vl_text",
            "qwen3_vl_moe_text",
            "qwen2_5_omni_text",
        ),
        LLAMA,
    ),
    "qwen3_omni_moe_text": QWEN2_MOE,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""

THINKER_TEXT = ("thinker_config", "text_config")
TEXT_LOCATIONS = {
    "qwen2_vl": ((), "qwen2_vl_text"),
    "qwen2_5_vl": ((), "qwen2_5_vl_text"),
    "qwen2_5_omni": (THINKER_TEXT, "qwen2_5_omni_text"),
    "qwen3_omni_moe": (THINKER_TEXT, "qwen3_omni_moe_text"),
}
