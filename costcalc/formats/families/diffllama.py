"""DiffLlama (transformers 5.24, ``models/diffllama/modeling_diffllama.py``): Llama with
differential attention.

``embed_tokens`` (V x D); per block ``input_layernorm`` and ``post_attention_layernorm``
(RMSNorm, D); ``self_attn``: ``q_proj`` (D x H d), ``k_proj``/``v_proj`` (D x K d), ``o_proj``
(H d x D), all with a bias when ``attention_bias``, and ``lambda_q1``, ``lambda_k1``,
``lambda_q2``, ``lambda_k2`` (d each); ``groupnorm`` has no weight. The values' key/value heads
are split in two halves, each attended with the same queries and keys (two attention calls),
and the two outputs are subtracted with the learned lambda. ``mlp``: ``gate_proj``, ``up_proj``
(D x h), ``down_proj`` (h x D), SwiGLU, no biases. A final ``norm``; ``lm_head`` (V x D,
untied by default).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import llama_layout
from costcalc.formats.hf_reader import Reader, attention_bias
from costcalc.formats.peft_names import LLAMA

DIFFLLAMA_SIZES: dict[str, Any] = {
    "vocab_size": 32_000,
    "d_model": 2048,
    "n_layers": 16,
    "n_heads": 32,
    "context_length": 2048,
    "ffn_hidden": 8192,
}
"""DiffLlamaConfig's defaults."""


def diffllama(r: Reader) -> dict[str, Any]:
    """DiffLlamaForCausalLM: the layout above with DiffLlamaConfig's defaults (key/value heads =
    heads, ``head_dim`` D / H); transformers refuses an odd number of key/value heads."""
    fields = llama_layout(r, sizes=DIFFLLAMA_SIZES)
    attention_bias(r, fields)
    fields["differential_attention"] = True
    return fields


FAMILIES = {"diffllama": diffllama}


PEFT_NAMES = {
    "diffllama": LLAMA,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
