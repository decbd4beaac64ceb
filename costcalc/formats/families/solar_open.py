"""Solar Open (``SolarOpenForCausalLM``, transformers 5.24, ``models/solar_open``): Llama's
attention (``q_proj`` D x H d, ``k_proj``/``v_proj`` D x K d, biases when ``attention_bias``;
``o_proj`` H d x D, never biased) and in EVERY layer a mixture of experts: ``mlp.gate`` (router
X x D, no bias; ``e_score_correction_bias`` is a buffer), ``mlp.experts`` (X SwiGLU experts of
``moe_intermediate_size``, stacked) and ``mlp.shared_experts`` (one SwiGLU MLP of
``moe_intermediate_size`` x ``n_shared_experts``); RMSNorm x 2 per block, final ``norm``,
``lm_head`` untied by default. The configuration has no dense MLP width.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import routed_experts, shared_experts
from costcalc.formats.hf_reader import Reader
from costcalc.formats.peft_names import DEEPSEEK

SOLAR_OPEN_SIZES: dict[str, Any] = {
    "vocab_size": 196_608,
    "d_model": 4096,
    "n_layers": 48,
    "n_heads": 64,
    "context_length": 131_072,
    "ffn_hidden": None,
}
"""SolarOpenConfig's defaults (Solar-Open-100B)."""


def solar_open(r: Reader) -> dict[str, Any]:
    """SolarOpenForCausalLM: every size with SolarOpenConfig's default, 8 key/value heads and
    ``head_dim`` 128 unless given; ``n_routed_experts`` (or ``num_local_experts``, 128) experts
    of ``moe_intermediate_size`` (1,280), top ``num_experts_per_tok`` (8), ``n_shared_experts``
    (1) shared."""
    fields = llama_layout(r, kv_heads=8, head_dim=128, sizes=SOLAR_OPEN_SIZES)
    fields.pop("ffn_hidden")
    r.forget("ffn_hidden")
    fields["qkv_bias"] = r.value("qkv_bias", "attention_bias", default=False)
    fields["attn_out_bias"] = False
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_local_experts"),
        ("num_experts_per_tok",),
        (128, 8),
        (("moe_intermediate_size",), 1280),
    )
    shared_experts(r, moe, "n_shared_experts", 1)
    fields.update(moe)
    return fields


FAMILIES = {"solar_open": solar_open}


PEFT_NAMES = {
    "solar_open": DEEPSEEK,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
