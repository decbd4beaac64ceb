"""BitNet b1.58 (transformers 5.24, ``models/bitnet/modeling_bitnet.py``): Llama's layout with a
norm inside the attention and one inside the MLP.

``embed_tokens`` (V x D); per block ``input_layernorm`` and ``post_attention_layernorm``
(RMSNorm, D), ``self_attn``: ``q_proj`` (D x H d), ``k_proj``/``v_proj`` (D x K d), ``o_proj``
(H d x D), q/k/v/o with a bias when ``attention_bias``, and ``attn_sub_norm`` (RMSNorm over D,
on the attention output before ``o_proj``: H d must equal D); ``mlp``: ``gate_proj``,
``up_proj`` (D x h), ``ffn_sub_norm`` (RMSNorm over h) and ``down_proj`` (h x D), gated by
``hidden_act`` (relu2); a final ``norm``; ``lm_head`` (V x D, untied by default). Counted are
the logical weights, as ``from_config`` builds them; a checkpoint's ``quantization_config``
(ternary weights packed four to a byte) changes how they are stored, not how many there are.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import llama_layout
from costcalc.formats.hf_reader import Reader, attention_bias
from costcalc.formats.peft_names import LLAMA

BITNET_SIZES: dict[str, Any] = {
    "vocab_size": 128_256,
    "d_model": 2560,
    "n_layers": 30,
    "n_heads": 20,
    "context_length": 2048,
    "ffn_hidden": 6912,
}
"""BitNetConfig's defaults (BitNet b1.58 2B4T's sizes)."""


def bitnet(r: Reader) -> dict[str, Any]:
    """BitNetForCausalLM: the layout above with BitNetConfig's defaults (5 key/value heads,
    ``head_dim`` D / H); the attention's sub-norm is a third norm of D per block."""
    fields = llama_layout(r, kv_heads=5, sizes=BITNET_SIZES)
    attention_bias(r, fields)
    fields.update(norms_per_block=3, ffn_inner_norm=True)
    return fields


FAMILIES = {"bitnet": bitnet}


PEFT_NAMES = {
    "bitnet": LLAMA,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
