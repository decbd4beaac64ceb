"""Hugging Face family hy_v3 (Hunyuan 3, HYV3ForCausalLM; transformers 5.24,
``models/hy_v3/modeling_hy_v3.py``): Llama's layout with per-head query/key norms and a sparse
MoE with a shared expert after the dense layers ``mlp_layer_types`` names."""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import mlp_bias_not_experts, routed_experts, shared_experts
from costcalc.formats.families.moe_windows import _ffn_runs
from costcalc.formats.hf_reader import Reader, attention_bias
from costcalc.formats.peft_names import DEEPSEEK_NAMES


def hy_v3(r: Reader) -> dict[str, Any]:
    """HYV3ForCausalLM: the shared layout (64 heads, 8 key/value heads, ``head_dim`` 128 by
    default; H d may differ from D) with RMSNorm ``q_norm``/``k_norm`` of head_dim, q/k/v/o
    bias when ``attention_bias``; dense SwiGLU ``mlp`` (``intermediate_size``) where
    ``mlp_layer_types`` says ``dense`` (default: the first layer), else ``HYV3MoE``:
    ``mlp.gate.weight`` (X x D, no bias; ``e_score_correction_bias`` a buffer), X =
    ``num_experts`` (192) SwiGLU experts of ``moe_intermediate_size`` (1,536), top
    ``num_experts_per_tok`` (8), and ``shared_experts`` (SwiGLU of ``moe_intermediate_size`` x
    ``num_shared_experts`` (1)); untied by default. ``mlp_bias`` biases the dense and shared
    MLPs, not the routed experts."""
    fields = llama_layout(r, kv_heads=8, head_dim=128)
    attention_bias(r, fields)
    fields["qk_norm"] = "head"
    moe = routed_experts(
        r,
        ("num_experts", "num_local_experts"),
        ("num_experts_per_tok",),
        (192, 8),
        (("moe_intermediate_size",), 1536),
    )
    shared_experts(r, moe, "num_shared_experts", 1)
    mlp_bias_not_experts(r, fields, moe)
    ffn = _ffn_runs(r, fields["n_layers"], None, 1)
    hf_layers.apply(r, fields, ffn, {"dense": {}, "sparse": moe}, "mlp_layer_types")
    return fields


FAMILIES = {"hy_v3": hy_v3}


PEFT_NAMES = {
    "hy_v3": DEEPSEEK_NAMES,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
