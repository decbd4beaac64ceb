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
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole
from costcalc.formats.peft_names import QWEN2_MOE


def mellum(r: Reader) -> dict[str, Any]:
    """MellumForCausalLM: 4 key/value heads and ``head_dim`` 128 unless given; ``num_experts``
    (or ``num_local_experts``, 64) experts of ``moe_intermediate_size`` (896), top
    ``num_experts_per_tok`` (8); every layer sparse and attending fully unless
    ``mlp_layer_types`` (``sparse``/``dense``) and ``layer_types`` list them; windows of
    ``sliding_window`` (default 1,024). More than one MTP layer is refused, as MellumConfig's
    ``validate_architecture`` refuses it (configuration_mellum.py, line 141)."""
    mtp = r.setting("num_mtp_layers")
    if is_whole(mtp) and mtp > 1:
        r.refused_by_class("num_mtp_layers", f"{mtp:,}: Mellum has a single MTP layer")
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
    attention = _listed_runs(r, n, "layer_types", "full_attention")
    ffns = _listed_runs(r, n, "mlp_layer_types", "sparse")
    blocks = hf_layers.merged_blocks(
        hf_layers.attention_windows(window), {"sparse": moe, "dense": {}}
    )
    hf_layers.apply(r, fields, hf_layers.merge(attention, ffns), blocks)
    return fields


def _listed_runs(r: Reader, n: int, key: str, default: str) -> list[tuple[str, int]]:
    """The runs of kinds ``key`` lists, else one run of ``default`` (closed form, any n)."""
    listed = hf_layers.layer_types(r, n, key)
    return hf_layers.runs(listed) if listed is not None else [(default, n)]


FAMILIES = {"mellum": mellum}


PEFT_NAMES = {
    "mellum": QWEN2_MOE,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
