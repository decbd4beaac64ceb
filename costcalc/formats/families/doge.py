"""Hugging Face Doge (doge): dynamic mask attention and, optionally, the cross-domain mixture
of experts retrieved by product keys.

The translator reads the keys of ``DogeConfig`` with that class's defaults and its docstring
names the tensors the modeling code builds (transformers 5.24, ``modeling_doge.py``).
"""

from __future__ import annotations

from math import isqrt
from typing import Any

from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole, mlp_bias
from costcalc.formats.peft_names import llama_names

SIZES = {
    "vocab_size": 32768,
    "d_model": 1024,
    "n_layers": 32,
    "n_heads": 8,
    "context_length": 2048,
    "ffn_hidden": 2048,
}
"""``DogeConfig``'s defaults of the standard sizes."""


def doge(r: Reader) -> dict[str, Any]:
    """DogeForCausalLM: ``embed_tokens`` (V x D); per layer ``input_layernorm`` and
    ``post_attention_layernorm`` (RMSNorm, D each), the residual scales ``input_residual`` and
    ``post_attention_residual`` (D each); ``self_attn``: ``q_proj`` D -> H d, ``k_proj``/
    ``v_proj`` D -> K d, ``o_proj`` H d -> D, RMSNorm ``q_norm``/``k_norm`` (d each), and the
    dynamic mask's ``dt_proj`` (K d -> K) and ``A`` (K), biases on all four projections and
    ``dt_proj`` when ``attention_bias``; the ``mlp`` a SwiGLU of ``intermediate_size`` h
    (biases when ``mlp_bias``), or with ``is_moe`` the cross-domain mixture of experts: that
    MLP as the shared expert, ``router_gate`` D -> 2 floor(sqrt(X)) and the expert tables
    ``down_embed``, ``up_embed`` (X x D each), X ``num_experts`` (16,384), each token running
    ``num_experts_per_tok`` (64) of them; final ``norm``; ``lm_head`` untied by default. D
    ``hidden_size`` (1,024), H ``num_attention_heads`` (8), K ``num_key_value_heads`` (H), d
    D / H (``head_dim`` when the file gives one). Every layer attends within
    ``sliding_window`` when it is set; ``keep_window_size`` masks pairs eager attention still
    computes."""
    fields = llama_layout(r, sizes=SIZES)
    attention_bias(r, fields)
    mlp_bias(r, fields)
    fields.update(
        qk_norm="head",
        dynamic_mask=True,
        residual_scales=True,
        sliding_window=r.value("sliding_window", "sliding_window", default=None),
    )
    if not r.flag("is_moe", False):
        return fields
    moe = routed_experts(r, ("num_experts",), ("num_experts_per_tok",), (16384, 64))
    experts, top_k = moe["moe_experts"], moe["moe_top_k"]
    if is_whole(experts, 1) and is_whole(top_k, 1) and top_k > isqrt(experts) ** 2:
        r.fail(
            "num_experts_per_tok",
            f"the product keys reach {isqrt(experts) ** 2:,} of the {experts:,} experts "
            f"(floor(sqrt(num_experts))^2); a token cannot run {top_k:,}",
        )
    fields.update(moe, moe_product_keys=True, moe_shared_ffn_hidden=fields["ffn_hidden"])
    return fields


FAMILIES = {"doge": doge}


PEFT_NAMES = {
    "doge": llama_names(
        renames={
            f"mlp.shared_expert.{p}": f"mlp.{p}" for p in ("gate_proj", "up_proj", "down_proj")
        },
        router_linear=True,
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
