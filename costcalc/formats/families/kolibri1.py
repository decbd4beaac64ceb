"""Hugging Face family kolibri1 (Kolibri 1, Kolibri1ForCausalLM; transformers 5.24,
``models/kolibri1/modeling_kolibri1.py``): GLM-4's sandwich block around EXAONE 4's attention, a
sparse MoE with a shared expert in every layer, sliding-window attention but every 5th layer."""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import sliding_window
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.families.moe_windows import _windows_and_experts
from costcalc.formats.hf_reader import Reader, standard_sizes
from costcalc.formats.peft_names import DEEPSEEK_NAMES


def kolibri1(r: Reader) -> dict[str, Any]:
    """Kolibri1ForCausalLM: ``embed_tokens`` (V x D); per layer ``q_proj`` (D x H d),
    ``k_proj``/``v_proj`` (D x K d), ``o_proj`` (H d x D), no biases, RMSNorm
    ``q_norm``/``k_norm`` of d (K ``num_key_value_heads`` 4, d ``head_dim`` 128; H d may differ
    from D); four RMSNorms (``input_layernorm``, ``post_self_attn_layernorm``,
    ``post_attention_layernorm``, ``post_mlp_layernorm``); in every layer the sparse block:
    ``mlp.gate.weight`` (X x D; ``e_score_correction_bias`` a buffer), X = ``num_experts`` (384)
    SwiGLU experts of ``moe_intermediate_size`` (512), top ``num_experts_per_tok`` (6), and
    ``shared_experts`` (SwiGLU of ``shared_expert_intermediate_size``, 512, ungated); final
    ``norm``; untied by default. There is no dense MLP (no ``intermediate_size``). Layers attend
    within ``sliding_window`` (513) as ``layer_types`` lists them, else every 5th is full."""
    fields = standard_sizes(r)
    fields.update(
        n_kv_heads=r.value("n_kv_heads", "num_key_value_heads", default=4),
        head_dim=r.value("head_dim", "head_dim", default=128),
        position="rotary",
        ffn="swiglu",
        norm="rmsnorm",
        qk_norm="head",
        qkv_bias=False,
        attn_out_bias=False,
        ffn_bias=False,
        fused_qkv=False,
        norms_per_block=4,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=False),
    )
    moe = routed_experts(
        r, ("num_experts",), ("num_experts_per_tok",), (384, 6), (("moe_intermediate_size",), 512)
    )
    moe["moe_shared_ffn_hidden"] = r.value(
        "moe_shared_ffn_hidden", "shared_expert_intermediate_size", default=512
    )
    window = sliding_window(r, default=513)
    every = hf_layers.every_nth(5, "full_attention", "sliding_attention")
    n = hf_layers.count_of(fields["n_layers"])
    if n is not None:
        _windows_and_experts(r, fields, window, every, [("sparse", n)], moe)
    return fields


FAMILIES = {"kolibri1": kolibri1}


PEFT_NAMES = {
    "kolibri1": DEEPSEEK_NAMES,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
