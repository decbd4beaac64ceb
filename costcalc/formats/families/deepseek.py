"""DeepSeek-V2 and DeepSeek-V3: multi-head latent attention (MLA) and a mixture of experts after
``first_k_dense_replace`` dense layers (transformers 5.24, ``models/deepseek_v2``, ``deepseek_v3``);
Youtu-LLM: the same attention with a dense MLP in every layer (``models/youtu``).

Per block: ``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm, D); ``self_attn``:
``q_a_proj`` (D -> q rank, bias when ``attention_bias``), ``q_a_layernorm`` (q rank),
``q_b_proj`` (q rank -> H (n + r)), or one ``q_proj`` (D -> H (n + r)) when ``q_lora_rank`` is
null; ``kv_a_proj_with_mqa`` (D -> kv rank + r, bias when ``attention_bias``),
``kv_a_layernorm`` (kv rank), ``kv_b_proj`` (kv rank -> H (n + v)), ``o_proj`` (H v -> D, bias
when ``attention_bias``); n, r, v = ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``.
The first ``first_k_dense_replace`` layers hold a SwiGLU ``mlp`` of ``intermediate_size``; the
others ``mlp.gate`` (router X x D, no bias: V3's ``e_score_correction_bias`` is a buffer, not a
parameter), ``mlp.experts`` (X SwiGLU experts of ``moe_intermediate_size``, stacked) and
``mlp.shared_experts`` (one SwiGLU MLP of ``moe_intermediate_size`` x ``n_shared_experts``).
The cache keeps the latent, not per-head keys: kv rank + r per token and layer.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import first_dense, routed_experts, shared_experts
from costcalc.formats.hf_reader import Reader, attention_bias

MLA_DEFAULTS: dict[str, int | None] = {
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
}
"""The attention sizes' defaults, the same in ``DeepseekV2Config`` and ``DeepseekV3Config``."""


def mla_layout(r: Reader, tie: bool = False) -> dict[str, Any]:
    """The shared layout with MLA instead of Llama's attention: the sizes above with their
    defaults, biases as ``attention_bias`` says, a dense SwiGLU MLP of ``intermediate_size``."""
    fields = llama_layout(r, tie=tie)
    for name in ("n_kv_heads", "head_dim"):  # MLA has no per-head keys of its own
        fields.pop(name)
    r.forget("n_kv_heads", "head_dim")
    attention_bias(r, fields)
    fields["mixer"] = "mla"
    fields["q_lora_rank"] = r.nullable("q_lora_rank", "q_lora_rank", MLA_DEFAULTS["q_lora_rank"])
    for field in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
        fields[field] = r.value(field, field, default=MLA_DEFAULTS[field])
    return fields


def _deepseek(
    r: Reader, experts: tuple[int, int | None], moe_hidden: int, shared: int, dense: int
) -> dict[str, Any]:
    """The layout both versions share, with each version's MoE defaults: experts and top-k,
    expert width, shared experts, dense layers first."""
    fields = mla_layout(r)
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_local_experts", "num_experts"),
        ("num_experts_per_tok",),
        experts,
        (("moe_intermediate_size",), moe_hidden),
    )
    shared_experts(r, moe, "n_shared_experts", shared)
    first_dense(r, fields, moe, dense)
    return fields


def deepseek_v3(r: Reader) -> dict[str, Any]:
    """DeepseekV3ForCausalLM: the layout above with V3's defaults (q rank 1,536, kv rank 512,
    r 64, n 128, v 128; 256 experts of 2,048, top 8, one shared; 3 dense layers); untied by
    default. The multi-token-prediction layers (``num_nextn_predict_layers``) are not built."""
    return _deepseek(r, experts=(256, 8), moe_hidden=2048, shared=1, dense=3)


def deepseek_v2(r: Reader) -> dict[str, Any]:
    """DeepseekV2ForCausalLM: the layout above with V2's defaults (q rank 1,536, kv rank 512,
    r 64, n 128, v 128; 64 experts of 1,407, two shared; no dense layers); ``num_experts_per_tok``
    has no default and is required; ``mlp_bias`` (biases on the dense MLPs) is not supported."""
    if r.flag("mlp_bias", False):
        r.unsupported("mlp_bias", "biases on DeepSeek-V2's dense and shared MLPs")
    return _deepseek(r, experts=(64, None), moe_hidden=1407, shared=2, dense=0)


def youtu(r: Reader) -> dict[str, Any]:
    """YoutuForCausalLM (Youtu-LLM): DeepSeek-V3's attention (the same MLA sizes and defaults;
    ``rope_interleave`` changes no parameter) and a dense SwiGLU ``mlp`` of
    ``intermediate_size`` in every layer; tied by default."""
    return mla_layout(r, tie=True)


FAMILIES = {
    "deepseek_v2": deepseek_v2,
    "deepseek_v3": deepseek_v3,
    "youtu": youtu,
}
