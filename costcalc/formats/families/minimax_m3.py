"""Hugging Face family minimax_m3_vl_text (MiniMax M3's language model, the ``text_config`` of
``minimax_m3_vl``; transformers 5.24, ``models/minimax_m3_vl/modeling_minimax_m3_vl.py``):
grouped-query attention with per-head query/key norms and, on its sparse layers, MiniMax's
block-sparse indexer; dense layers, then a sparse MoE with a shared expert."""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader
from costcalc.formats.peft_names import DEEPSEEK_NAMES

TEXT_SIZES: dict[str, Any] = {
    "vocab_size": 200064,
    "d_model": 6144,
    "n_layers": 60,
    "n_heads": 64,
    "context_length": 524288,
    "ffn_hidden": 3072,
}
"""``MiniMaxM3VLTextConfig``'s defaults for the standard sizes."""


def minimax_m3_vl_text(r: Reader) -> dict[str, Any]:
    """MiniMaxM3VLForCausalLM (text): ``embed_tokens`` (V x D); per layer ``q_proj`` (D x H d),
    ``k_proj``/``v_proj`` (D x K d), ``o_proj``, no biases, RMSNorm ``q_norm``/``k_norm`` of d
    (H 64, K ``num_key_value_heads`` 4, d ``head_dim`` 128), rotary on ``rotary_dim`` (64) of
    each head; two RMSNorms (D); on the layers ``layer_types`` marks ``minimax_m3_sparse``
    (default: none) the indexer ``self_attn.indexer``: ``q_proj`` (D -> Hi di), ``k_proj``
    (D -> di), RMSNorm ``q_norm``/``k_norm`` of di (Hi ``index_n_heads`` 4, di
    ``index_head_dim`` 128), whose key is cached. Dense ``mlp`` (``gate_up_proj`` D -> 2 h,
    ``down_proj``; h ``dense_intermediate_size`` 12,288) where ``mlp_layer_types`` says
    ``dense`` (default: none), else the sparse block: ``mlp.gate.weight`` (X x D;
    ``e_score_correction_bias`` a buffer), X = ``num_local_experts`` (128) clamped-SwiGLU
    experts of ``intermediate_size`` (3,072), top ``num_experts_per_tok`` (4), and
    ``shared_experts`` (the dense MLP of ``shared_intermediate_size``, 3,072); final ``norm``;
    untied by default. The legacy ``sparse_attention_config`` and ``moe_layer_freq`` are
    refused."""
    for key in ("sparse_attention_config", "moe_layer_freq"):
        if r.data.get(key) is not None:
            r.unsupported(key, "the legacy layer schedule; give layer_types and mlp_layer_types")
    fields = llama_layout(r, kv_heads=4, head_dim=128, sizes=TEXT_SIZES)
    fields.update(qk_norm="head", fused_gate_up=True)
    fields["rotary_dim"] = r.value("rotary_dim", "rotary_dim", default=64)
    moe = routed_experts(
        r,
        ("num_local_experts",),
        ("num_experts_per_tok",),
        (128, 4),
        (("intermediate_size",), 3072),
    )
    moe["moe_shared_ffn_hidden"] = r.value(
        "moe_shared_ffn_hidden", "shared_intermediate_size", default=3072
    )
    fields["ffn_hidden"] = r.value("ffn_hidden", "dense_intermediate_size", default=12288)
    indexer = {
        "indexer_heads": r.value("indexer_heads", "index_n_heads", default=4),
        "indexer_head_dim": r.value("indexer_head_dim", "index_head_dim", default=128),
    }
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    listed = hf_layers.layer_types(r, n)
    attention = hf_layers.runs(listed) if listed is not None else [("full_attention", n)]
    mlp = hf_layers.layer_types(r, n, "mlp_layer_types")
    ffn = hf_layers.runs(mlp) if mlp is not None else [("sparse", n)]
    blocks = {"full_attention": {}, "minimax_m3_sparse": indexer}
    hf_layers.combine(
        r, fields, hf_layers.Layout(attention), blocks, ffn, {"dense": {}, "sparse": moe}
    )
    return fields


FAMILIES = {"minimax_m3_vl_text": minimax_m3_vl_text}


PEFT_NAMES = {
    "minimax_m3_vl_text": DEEPSEEK_NAMES,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
