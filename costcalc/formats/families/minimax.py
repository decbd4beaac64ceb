"""MiniMax-Text-01 (transformers 5.24, ``models/minimax/modeling_minimax.py``): lightning
attention layers among softmax attention layers, a sparse mixture of experts in every layer.

``embed_tokens`` (V x D); per layer ``input_layernorm`` and ``post_attention_layernorm``
(RMSNorm, D each; the residual weights ``*_alpha_factor``/``*_beta_factor`` are scalars of the
config, not parameters), a mixer ``self_attn`` and ``mlp``: router ``gate`` (X x D, a bare
weight) and X SwiGLU ``experts`` (``gate_up_proj`` X x 2h x D, ``down_proj`` X x D x h). The
layers ``layer_types`` marks ``full_attention`` hold softmax attention (``q_proj`` D -> H d,
``k_proj``/``v_proj`` D -> K d, ``o_proj``; no biases; rotary over the whole head), those it
marks ``linear_attention`` lightning attention (``qkv_proj`` D -> 3 H d, ``output_gate`` D ->
H d, RMSNorm ``norm`` of H d, ``out_proj`` H d -> D; no biases), its prompt computed in blocks of
``block_size`` (256) tokens and its cache a state of H d x d. Without ``layer_types`` the
class alternates them: full on even layers, lightning on odd ones. Final ``norm``; untied by
default. d = ``head_dim`` (default D / H), K = ``num_key_value_heads`` (8), X =
``num_local_experts`` (8), top ``num_experts_per_tok`` (2), h = ``intermediate_size``.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout, sliding_window
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import MIXTRAL_CONVERTED, ROUTER_GATE, llama_names

MINIMAX_SIZES = {
    "vocab_size": 32000,
    "d_model": 4096,
    "n_layers": 32,
    "n_heads": 32,
    "context_length": 131072,
    "ffn_hidden": 14336,
}
"""``MiniMaxConfig``'s defaults for the standard sizes."""

ATTENTION_KEYS = ("n_heads", "n_kv_heads", "head_dim")
"""The softmax attention layers' own keys (a lightning layer has heads of its own)."""


def minimax(r: Reader) -> dict[str, Any]:
    """MiniMaxForCausalLM, as above. A window (``sliding_window``, default none) masks the
    softmax layers' pairs; ``MiniMaxCache`` still keeps every token. ``attn_type_list`` (the
    remote-code checkpoints' key) is not read by ``MiniMaxConfig``, which then builds its own
    alternation: such a file is refused rather than counted as a model it does not describe."""
    fields = llama_layout(r, kv_heads=8, sizes=MINIMAX_SIZES)
    fields.update(routed_experts(r, ("num_local_experts",), ("num_experts_per_tok",), (8, 2)))
    window = sliding_window(r, default=None)
    if "layer_types" not in r.data and "attn_type_list" in r.data:
        r.unsupported(
            "attn_type_list",
            "transformers' MiniMaxConfig does not read it and builds its default alternation; "
            "give layer_types (1: full_attention, 0: linear_attention), as "
            "MiniMaxAI/MiniMax-Text-01-hf does",
        )
    D, H, d = fields["d_model"], fields["n_heads"], fields["head_dim"]
    if d is None and is_whole(D, 1) and is_whole(H, 1) and D % H == 0:
        d = D // H
    lightning = {
        "mixer": "lightning",
        "lightning": {
            "heads": H,
            "head_dim": d,
            "block_size": r.value("lightning", "block_size", default=256),
        },
    }
    r.forget("lightning")
    attention = {
        "mixer": "attention",
        **{key: fields.pop(key) for key in ATTENTION_KEYS},
        **({} if window is None else {"sliding_window": window, "kv_cache_all_tokens": True}),
    }
    blocks = {"full_attention": attention, "linear_attention": lightning}

    alternation = hf_layers.every_nth(2, "linear_attention", "full_attention")
    hf_layers.listed_or_rule(r, fields, blocks, lambda n: alternation)
    return fields


FAMILIES = {"minimax": minimax}


PEFT_NAMES = {
    "minimax": llama_names(renames=ROUTER_GATE, converted=MIXTRAL_CONVERTED),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
