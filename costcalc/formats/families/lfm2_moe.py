"""LFM2-MoE (transformers 5.24, ``models/lfm2_moe/modeling_lfm2_moe.py``): LFM2's hybrid of
gated short convolutions and attention, with sparse FFNs after the first dense layers."""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.linear_attention import ATTENTION_KEYS, lfm2_parts
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader
from costcalc.formats.peft_names import FEED_FORWARD, LFM2_RENAMES, llama_names


def lfm2_moe(r: Reader) -> dict[str, Any]:
    """Lfm2MoeForCausalLM (LFM2-8B-A1B): ``embed_tokens`` (V x D); per layer ``operator_norm``
    and ``ffn_norm`` (RMSNorm, D each) and a mixer: attention (``q_proj`` D -> H d,
    ``k_proj``/``v_proj`` D -> K d, ``out_proj``, RMSNorms ``q_layernorm``/``k_layernorm`` of d,
    no biases, rotary; K ``num_key_value_heads`` (8), d = D / H) where ``layer_types`` (required)
    says ``full_attention``, else a short convolution ``conv``: ``in_proj`` D -> 3D, ``conv``
    (D, 1, ``conv_L_cache`` (3)), ``out_proj`` D -> D, biases when ``conv_bias`` (false). The
    first ``num_dense_layers`` (2) layers hold a SwiGLU ``feed_forward`` (``w1``, ``w3`` D -> h,
    ``w2`` h -> D) of ``intermediate_size``; the others the sparse block: ``gate`` (X x D, no
    bias; ``expert_bias`` a buffer), X = ``num_experts`` (32) SwiGLU experts of
    ``moe_intermediate_size`` (1,792), top ``num_experts_per_tok`` (4). The final norm is named
    ``embedding_norm`` (D); tied by default."""
    fields, conv = lfm2_parts(r, lambda r: r.size("ffn_hidden", "intermediate_size"))
    moe = routed_experts(
        r, ("num_experts",), ("num_experts_per_tok",), (32, 4), (("moe_intermediate_size",), 1792)
    )
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    listed = hf_layers.layer_types(r, n)
    if listed is None:
        r.fail("layer_types", "required key is missing (conv or full_attention per layer)")
        return fields
    attention = {"mixer": "attention", **{k: fields.pop(k) for k in ATTENTION_KEYS if k in fields}}
    mixers = {"full_attention": attention, "conv": conv}
    kinds = hf_layers.runs(listed)
    if any(kind not in mixers for kind, _ in kinds):
        hf_layers.apply(r, fields, kinds, mixers)  # reports the unknown kind
        return fields
    ffn = hf_layers.split_at(r, n, "num_dense_layers", 2, "dense", "moe")
    blocks = hf_layers.merged_blocks(mixers, {"dense": {}, "moe": moe})
    hf_layers.apply(r, fields, hf_layers.merge(kinds, ffn), blocks)
    return fields


FAMILIES = {"lfm2_moe": lfm2_moe}


PEFT_NAMES = {
    "lfm2_moe": llama_names(FEED_FORWARD, {**LFM2_RENAMES, "mlp.router": "feed_forward.gate"}),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
