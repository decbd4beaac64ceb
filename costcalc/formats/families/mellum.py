"""Mellum 2 (``MellumForCausalLM``, transformers 5.24, ``models/mellum``): Llama's attention
(``q_proj`` D x H d, ``k_proj``/``v_proj`` D x K d, ``o_proj`` H d x D, biases when
``attention_bias``) with RMSNorm ``q_norm``/``k_norm`` of head_dim; the FFN of each layer is
either the sparse block (``mlp.gate``, a router X x D without bias, and ``mlp.experts``: X SwiGLU
experts of ``moe_intermediate_size``, stacked) or a dense SwiGLU ``mlp`` of
``intermediate_size``, as ``mlp_layer_types`` says; a layer attends fully or within
``sliding_window`` as ``layer_types`` says. RMSNorm x 2 per block, final ``norm``, ``lm_head``
untied by default; the multi-token-prediction layer (``num_mtp_layers``) is not built.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader, attention_bias


def mellum(r: Reader) -> dict[str, Any]:
    """MellumForCausalLM: 4 key/value heads and ``head_dim`` 128 unless given; ``num_experts``
    (or ``num_local_experts``, 64) experts of ``moe_intermediate_size`` (896), top
    ``num_experts_per_tok`` (8); every layer sparse and attending fully unless
    ``mlp_layer_types`` (``sparse``/``dense``) and ``layer_types`` list them; windows of
    ``sliding_window`` (default 1,024)."""
    fields = llama_layout(r, kv_heads=4, head_dim=128)
    attention_bias(r, fields)
    fields["qk_norm"] = "head"
    moe = routed_experts(
        r,
        ("num_experts", "num_local_experts"),
        ("num_experts_per_tok",),
        (64, 8),
        (("moe_intermediate_size",), 896),
    )
    window = r.nullable("sliding_window", "sliding_window", 1024)
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    attention = hf_layers.layer_types(r, n) or ["full_attention"] * n
    ffns = hf_layers.layer_types(r, n, "mlp_layer_types") or ["sparse"] * n
    blocks = {
        f"{kind}/{ffn}": {**attention_block, **ffn_block}
        for kind, attention_block in hf_layers.attention_windows(window).items()
        for ffn, ffn_block in (("sparse", moe), ("dense", {}))
    }
    runs = hf_layers.runs([f"{a}/{f}" for a, f in zip(attention, ffns, strict=True)])
    hf_layers.apply(r, fields, runs, blocks)
    return fields


FAMILIES = {"mellum": mellum}
