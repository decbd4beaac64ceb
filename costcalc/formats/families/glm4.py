"""GLM (``GlmForCausalLM``, GLM-4-9B) and GLM-4 (``Glm4ForCausalLM``, GLM-4-0414): the Llama
layout with the MLP's gate and up projections fused into ``gate_up_proj`` (D x 2h, no bias), a
bias on q/k/v (not on ``o_proj``) and rotary positions on half of each head. GLM has two RMSNorms
per block; GLM-4 four (``input_layernorm``, ``post_self_attn_layernorm``,
``post_attention_layernorm``, ``post_mlp_layernorm``, D each).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import llama_layout
from costcalc.formats.hf_reader import Reader, rotary_dim
from costcalc.formats.peft_names import LLAMA


def glm(
    r: Reader,
    *,
    head_dim: int | None = 128,
    rotary: float = 0.5,
    sizes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """GlmForCausalLM (GLM-4-9B, ``-hf`` files): 2 key/value heads and ``head_dim`` 128 unless
    given, q/k/v bias when ``attention_bias`` (default true), ``gate_up_proj`` D x 2h and
    ``down_proj`` h x D, 2 norms per block (``input_layernorm``, ``post_attention_layernorm``),
    rotary on ``partial_rotary_factor`` (default 0.5) of each head; untied by default. A family
    built alike may give other defaults for ``head_dim``, the rotary factor and the sizes."""
    fields = llama_layout(r, kv_heads=2, head_dim=head_dim, sizes=sizes)
    fields["qkv_bias"] = r.value("qkv_bias", "attention_bias", default=True)
    fields["fused_gate_up"] = True
    fields["rotary_dim"] = rotary_dim(r, fields, ("partial_rotary_factor",), rotary)
    return fields


def glm4(r: Reader, **defaults: Any) -> dict[str, Any]:
    """Glm4ForCausalLM: GLM's layout with 4 norms per block."""
    fields = glm(r, **defaults)
    fields["norms_per_block"] = 4
    return fields


FAMILIES = {"glm": glm, "glm4": glm4}


PEFT_NAMES = dict.fromkeys(FAMILIES, LLAMA)
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
