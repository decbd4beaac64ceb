"""Hugging Face family laguna (poolside Laguna, LagunaForCausalLM; transformers 5.24,
``models/laguna/modeling_laguna.py``): per-head query/key norms, an output gate, a query head
count per layer, sliding-window and full layers, a sparse MoE with a shared expert after the dense
layers ``mlp_layer_types`` names."""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.families.moe_windows import _ffn_runs
from costcalc.formats.hf_reader import Reader, attention_bias, gate_without_bias, is_whole
from costcalc.formats.peft_names import DEEPSEEK_NAMES, llama_names


def _heads(r: Reader, n: int, heads: Any) -> list[tuple[str, int]] | None:
    """Runs of query heads per layer: ``num_attention_heads_per_layer`` when the file lists it,
    else ``heads`` in every layer."""
    listed = r.data.get("num_attention_heads_per_layer")
    if listed is None:
        return [(str(heads), n)]
    if not isinstance(listed, list) or not all(is_whole(h, 1) for h in listed):
        r.fail("num_attention_heads_per_layer", "expected a list of head counts")
        return None
    if len(listed) != n:
        r.fail(
            "num_attention_heads_per_layer", f"lists {len(listed):,} layers, the model has {n:,}"
        )
        return None
    return hf_layers.runs([str(h) for h in listed])


def laguna(r: Reader) -> dict[str, Any]:
    """LagunaForCausalLM: the shared layout (48 heads, 8 key/value heads, ``head_dim`` 128; H d
    may differ from D; q/k/v/o bias when ``attention_bias``) with RMSNorm ``q_norm``/``k_norm``
    of head_dim and a softplus output gate ``g_proj`` (no bias): D -> H per head when ``gating``
    is true or ``per-head`` (costcalc's ``attention_head_gate``), else D -> H d (its
    ``attention_gate_proj``, without a bias whatever ``attention_bias`` says). A layer's H is
    its entry of ``num_attention_heads_per_layer`` (default ``num_attention_heads``). Layers
    attend within ``sliding_window`` (512) where ``layer_types`` says ``sliding_attention``
    (default: none). Dense SwiGLU ``mlp`` (``intermediate_size``) where ``mlp_layer_types`` says
    ``dense`` (default: the first layer), else the sparse block: ``mlp.gate.weight`` (X x D) and
    ``e_score_correction_bias`` (X, a parameter not used in a product), X = ``num_experts``
    (256) SwiGLU experts of ``moe_intermediate_size`` (512), top ``num_experts_per_tok`` (8),
    and ``shared_experts`` (SwiGLU of ``shared_expert_intermediate_size``, 512); untied by
    default. Rotary on part of each head holds no parameters. ``moe_apply_router_weight_on_input``
    true is refused, as LagunaConfig's ``validate_architecture`` refuses it."""
    fields = llama_layout(r, kv_heads=8, head_dim=128)
    gating = r.data.get("gating", True)
    per_head = gating is True or gating == "per-head"
    (attention_bias if per_head else gate_without_bias)(r, fields)
    fields.update(
        qk_norm="head",
        attention_head_gate=per_head,
        attention_gate=not per_head,
        attention_gate_proj=not per_head,
    )
    moe = routed_experts(
        r, ("num_experts",), ("num_experts_per_tok",), (256, 8), (("moe_intermediate_size",), 512)
    )
    moe["moe_shared_ffn_hidden"] = r.value(
        "moe_shared_ffn_hidden", "shared_expert_intermediate_size", default=512
    )
    moe["moe_router_bias"] = True
    if r.setting("moe_apply_router_weight_on_input") is True:
        r.refused_by_class(
            "moe_apply_router_weight_on_input",
            "true, which transformers does not implement (a NotImplementedError)",
        )
    window = r.value("sliding_window", "sliding_window", default=512)
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    heads = _heads(r, n, fields["n_heads"])
    if heads is None:
        return fields
    listed = hf_layers.layer_types(r, n)
    attention = hf_layers.runs(listed) if listed is not None else [("full_attention", n)]
    blocks = hf_layers.merged_blocks(
        hf_layers.attention_windows(window), {h: {"n_heads": int(h)} for h, _ in heads}
    )
    layout = hf_layers.Layout(hf_layers.merge(attention, heads))
    ffn = _ffn_runs(r, n, None, 1)
    hf_layers.combine(r, fields, layout, blocks, ffn, {"dense": {}, "sparse": moe})
    return fields


FAMILIES = {"laguna": laguna}


PEFT_NAMES = {
    "laguna": llama_names(renames={**DEEPSEEK_NAMES.renames, "attn.gate_proj": "self_attn.g_proj"}),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
