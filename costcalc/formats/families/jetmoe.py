"""JetMoE (transformers 5.24, ``models/jetmoe/modeling_jetmoe.py``): a mixture of attention
heads and a mixture of MLP experts in every block.

``embed_tokens`` (V x D); per block ``input_layernorm`` and ``post_attention_layernorm``
(RMSNorm, D each); ``self_attention.experts`` (``JetMoeMoA``): ``input_linear`` (X x K d x D,
the query experts), ``output_linear`` (X x D x K d), ``router.layer`` (X x D, no bias) and
``bias`` (D), each token running k of the X experts, so H = K k query heads
(``num_attention_heads`` is set to ``num_key_value_heads`` x ``num_experts_per_tok``, whatever
the file says); ``self_attention.kv_proj`` (D -> 2 K d, no bias), keys and values repeated to
the H heads; ``mlp`` (``JetMoeMoE``): ``input_linear`` (X x 2h x D, gated), ``output_linear``
(X x D x h), ``router.layer`` (X x D) and ``bias`` (D); final ``norm``; the LM head tied by
default. d = ``kv_channels``, K = ``num_key_value_heads``, X = ``num_local_experts``, k =
``num_experts_per_tok``, h = ``intermediate_size``; rotary positions.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.hf_reader import STANDARD_KEYS, Reader, is_whole
from costcalc.formats.peft_names import DOWN, GATE_UP, llama_names

JETMOE_DEFAULTS = {
    "vocab_size": 32000,
    "d_model": 2048,
    "n_layers": 12,
    "context_length": 4096,
}
"""``JetMoeConfig``'s defaults for the standard sizes (its heads follow from K and k)."""


def jetmoe(r: Reader) -> dict[str, Any]:
    """JetMoeForCausalLM, as above (defaults: 12 layers of width 2,048, 16 key/value heads of
    128, 8 experts of 5,632, top 2, tied)."""
    fields = {
        field: r.value(field, *STANDARD_KEYS[field], default=default)
        for field, default in JETMOE_DEFAULTS.items()
    }
    kv_heads = r.value("n_kv_heads", "num_key_value_heads", default=16)
    top_k = r.value("moe_top_k", "num_experts_per_tok", default=2)
    experts = r.value(("moe_experts", "attention_experts"), "num_local_experts", default=8)
    heads = kv_heads * top_k if is_whole(kv_heads, 1) and is_whole(top_k, 1) else None
    r.key_names["n_heads"] = r.name("num_experts_per_tok")
    act = r.value("ffn", "activation_function", default="silu")
    fields.update(
        n_heads=heads,
        n_kv_heads=kv_heads,
        head_dim=r.value("head_dim", "kv_channels", "head_dim", default=128),
        attention_experts=experts,
        position="rotary",
        norm="rmsnorm",
        qkv_bias=False,
        attn_out_bias=True,
        fused_qkv=True,
        ffn="geglu" if isinstance(act, str) and act.startswith("gelu") else "swiglu",
        ffn_hidden=r.value("ffn_hidden", "intermediate_size", default=5632),
        ffn_bias=False,
        moe_experts=experts,
        moe_top_k=top_k,
        moe_output_bias=True,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    return fields


FAMILIES = {"jetmoe": jetmoe}


PEFT_NAMES = {
    "jetmoe": llama_names(
        {"attn": "self_attention"},
        {
            "mlp.router": "mlp.router.layer",
            GATE_UP: "mlp.input_linear.weight",
            DOWN: "mlp.output_linear.weight",
        },
        router_linear=True,
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
