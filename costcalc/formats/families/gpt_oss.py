"""gpt-oss (transformers 5.24, ``models/gpt_oss/modeling_gpt_oss.py``): Llama's layout with
attention sinks, biases everywhere but the norms and the LM head, and a sparse MoE in every layer.

Per block: ``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm, D); ``self_attn``:
``q_proj`` (D -> H d), ``k_proj`` and ``v_proj`` (D -> K d), ``o_proj`` (H d -> D), each with a
bias when ``attention_bias`` (default true), and ``sinks`` (one logit per query head, H);
``mlp.router`` (X x D plus a bias of X); ``mlp.experts``: ``gate_up_proj`` (X x D x 2h, stored
transposed) with ``gate_up_proj_bias`` (X x 2h), ``down_proj`` (X x h x D) with
``down_proj_bias`` (X x D); h = ``intermediate_size``, X = ``num_local_experts``, top
``num_experts_per_tok``. Layers alternate sliding (``sliding_window``, default 128; null: none)
and full attention, starting with sliding, unless ``layer_types`` lists them. Untied by default.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout, sliding_window
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader, attention_bias
from costcalc.formats.peft_names import llama_names


def gpt_oss(r: Reader) -> dict[str, Any]:
    """GptOssForCausalLM, as above (defaults: 8 key/value heads, head_dim 64, 128 experts,
    top 4)."""
    fields = llama_layout(r, kv_heads=8, head_dim=64)
    attention_bias(r, fields, default=True)
    fields["attention_sinks"] = True
    experts = routed_experts(
        r, ("num_local_experts", "num_experts"), ("num_experts_per_tok",), (128, 4)
    )
    fields.update(experts)
    fields.update(ffn_bias=True, moe_router_bias=True)
    window = sliding_window(r, default=128)
    hf_layers.attention_layers(r, fields, window, hf_layers.full_every(r, 2))
    return fields


FAMILIES = {"gpt_oss": gpt_oss}


PEFT_NAMES = {
    "gpt_oss": llama_names(),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
