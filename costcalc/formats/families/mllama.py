"""The text decoder of Llama 3.2 Vision (``mllama_text_model``, transformers 5.24
``models/mllama/modeling_mllama.py``; the wrapper ``mllama`` holds it under ``text_config``).

``MllamaForCausalLM`` builds ``embed_tokens`` of (V + 8) x D (eight rows past the vocabulary
for the image tokens), ``lm_head`` V x D (its own, whatever ``tie_word_embeddings`` says: the
class ties nothing), a final ``norm`` and two kinds of layer, by ``cross_attention_layers``:

- ``MllamaSelfAttentionDecoderLayer``: Llama's block: ``input_layernorm``,
  ``post_attention_layernorm`` (RMSNorm, D), ``self_attn.q_proj`` (D x H d), ``k_proj`` /
  ``v_proj`` (D x K d), ``o_proj`` (H d x D), ``mlp.gate_proj`` / ``up_proj`` (D x h),
  ``down_proj`` (h x D); no biases.
- ``MllamaCrossAttentionDecoderLayer``: the same norms, projections (``cross_attn.*``, keys and
  values projected from the image states) and MLP, plus ``cross_attn.q_norm`` / ``k_norm``
  (RMSNorm, d each) and two scalar gates, ``cross_attn_attn_gate`` and ``cross_attn_mlp_gate``.

d = D / H in both (no ``head_dim`` key). ``MllamaTextModel.forward`` skips a cross-attention layer
when there are neither image states nor cached ones: for text-only input those layers run nothing
and cache nothing (``gated_cross_attention``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import floored_head_dim, llama_layout
from costcalc.formats.hf_reader import Reader
from costcalc.formats.peft_names import LLAMA

MLLAMA_SIZES: dict[str, Any] = {
    "vocab_size": 128_256,
    "d_model": 4096,
    "n_layers": 40,
    "n_heads": 32,
    "context_length": 131_072,
    "ffn_hidden": 14_336,
}
"""MllamaTextConfig's defaults (Llama 3.2 11B Vision)."""

CROSS_ATTENTION_LAYERS = (3, 8, 13, 18, 23, 28, 33, 38)
"""MllamaTextConfig's ``cross_attention_layers`` when the file gives none."""

BLOCKS: dict[str, hf_layers.Block] = {
    "self_attention": {},
    "cross_attention": {"gated_cross_attention": True, "qk_norm": "head"},
}


def mllama_text(r: Reader) -> dict[str, Any]:
    """MllamaForCausalLM (and the text decoder of MllamaForConditionalGeneration): the layout
    above with MllamaTextConfig's defaults (8 key/value heads); the token table's V + 8 rows
    are ``vocab_size``, the head's V ``head_rows``. Both attentions take ``head_dim`` D // H
    whatever the file says (:func:`~costcalc.formats.families.llama.floored_head_dim`: a floor,
    with a note, where H does not divide D)."""
    fields = llama_layout(r, kv_heads=8, sizes=MLLAMA_SIZES)
    fields["head_dim"] = None
    r.forget("head_dim", "tie_embeddings")
    floored_head_dim(r, fields)
    fields["tie_embeddings"] = False
    vocab = fields["vocab_size"]
    if isinstance(vocab, int):
        fields.update(vocab_size=vocab + 8, head_rows=vocab)
        r.key_names["head_rows"] = r.name("vocab_size")
    n = hf_layers.count_of(fields["n_layers"])
    if n is not None:
        layout = hf_layers.at_indices(
            r,
            n,
            "cross_attention_layers",
            "cross_attention",
            "self_attention",
            default=CROSS_ATTENTION_LAYERS,
        )
        if layout is not None:
            hf_layers.apply(r, fields, layout.runs, BLOCKS, layout.key)
    return fields


FAMILIES = {"mllama_text_model": mllama_text}


PEFT_NAMES = {
    "mllama_text_model": LLAMA,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
