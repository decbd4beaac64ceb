"""Hugging Face Zamba 2 (zamba2): a Mamba-2 backbone with a shared transformer block reused
at several depths.

The function reads the keys of transformers' ``Zamba2Config`` with its defaults and its
docstring names the tensors ``modeling_zamba2.py`` builds (transformers 5.24). The shared
block's weights are tied across its uses (``_tied_weights_keys``), so ``parameters()`` yields
each weight set once; each use runs it and caches its keys and values.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.hf_reader import Reader, is_whole

MAMBA_KINDS = ("mamba", "linear_attention")
"""Names of a Mamba-2 layer in ``layers_block_type`` (``mamba`` is the legacy name)."""

DEFAULT_LAYERS = (
    [("mamba", 1)] + [("mamba", 5), ("hybrid", 1)] * 7
    + [("mamba", 4), ("hybrid", 1), ("mamba", 3), ("hybrid", 1), ("mamba", 2)]
)  # fmt: skip
"""``Zamba2Config``'s layers when ``layers_block_type`` is absent (54, whatever
``num_hidden_layers`` says)."""

GATED_ACTIVATIONS = {"gelu": "geglu", "gelu_new": "geglu", "gelu_pytorch_tanh": "geglu"}
GATED_ACTIVATIONS |= {"silu": "swiglu", "swish": "swiglu"}


def _mamba2(r: Reader, d_model: Any) -> dict[str, Any]:
    """The Mamba-2 mixer (``Zamba2MambaMixer``): I = int(``mamba_expand`` (2) x D), H
    ``n_mamba_heads`` (8) of P = I // H, N ``mamba_d_state`` (64), G ``mamba_ngroups`` (1),
    k ``mamba_d_conv`` (4), a conv bias always (``use_conv_bias`` is not read by the module),
    in/out biases when ``add_bias_linear``, chunks ``chunk_size`` (256)."""
    expand = r.value("mamba2", "mamba_expand", default=2)
    heads = r.value("mamba2", "n_mamba_heads", default=8)
    inner = int(expand * d_model) if isinstance(expand, int | float) and is_whole(d_model) else None
    if inner is not None and is_whole(heads, 1) and inner % heads:
        r.fail("n_mamba_heads", f"does not divide mamba_expand x hidden_size ({inner:,})")
    sizes = {
        "heads": heads,
        "head_dim": inner // heads if inner is not None and is_whole(heads, 1) else None,
        "state": r.value("mamba2", "mamba_d_state", default=64),
        "groups": r.value("mamba2", "mamba_ngroups", default=1),
        "conv_kernel": r.value("mamba2", "mamba_d_conv", default=4),
        "conv_bias": True,
        "proj_bias": r.value("mamba2", "add_bias_linear", default=False),
        "chunk_size": r.value("mamba2", "chunk_size", default=256),
    }
    r.forget("mamba2")
    return {"mixer": "mamba2", "mamba2": sizes}


def zamba2(r: Reader) -> dict[str, Any]:
    """Zamba2ForCausalLM: ``embed_tokens`` (V x D); every layer a Mamba-2 layer
    (``input_layernorm`` D, ``mamba``: ``in_proj`` D -> 2I + 2GN + H, ``conv1d`` (I + 2GN, 1,
    k), ``dt_bias``/``A_log``/``D`` (H), gated RMSNorm ``norm`` (I), ``out_proj`` I -> D). The
    layers ``layers_block_type`` marks ``hybrid`` first run ``shared_transformer``, one of
    ``num_mem_blocks`` (1) weight sets used in turn: ``input_layernorm`` (2 D) over the hidden
    state concatenated with the embeddings, ``self_attn`` (``q_proj`` 2 D -> H d, ``k_proj``/
    ``v_proj`` 2 D -> K d, ``o_proj`` H d -> D; d = 2 D / H, K ``num_key_value_heads`` (H), no
    biases, rotary when ``use_mem_rope``), ``pre_ff_layernorm`` (D) and ``feed_forward``
    (``gate_up_proj`` D -> 2h, ``down_proj``; h ``intermediate_size`` (4 D), gated by
    ``hidden_act``, biases when ``add_bias_linear``) with each use's adapter
    ``gate_up_proj_adapter_list`` (D -> r -> 2h, r ``adapter_rank`` 128) and, when
    ``use_shared_attention_adapter``, q/k/v adapters (2 D -> r -> 2 D); then their own
    ``linear`` (D x D). Final ``final_layernorm``; ``lm_head`` tied by default."""
    d = r.value("d_model", "hidden_size", default=2560)
    heads = r.value("n_heads", "num_attention_heads", default=32)
    kv = r.value("n_kv_heads", "num_key_value_heads", default=None)
    act = r.value("ffn", "hidden_act", default="gelu")
    if act not in GATED_ACTIVATIONS:
        r.unsupported("hidden_act", f"{act!r}; costcalc reads {', '.join(GATED_ACTIVATIONS)}")
    long = r.flag("use_long_context", False)
    mamba = {**_mamba2(r, d), "ffn": "none", "norms_per_block": 1}
    hybrid = {
        **mamba,
        "mixer": "attention",
        "parallel_mamba2": True,
        "n_heads": heads,
        "n_kv_heads": heads if kv is None else kv,
        "head_dim": 2 * d // heads if is_whole(d, 1) and is_whole(heads, 1) else None,
        "qkv_bias": False,
        "attn_out_bias": False,
        "fused_qkv": False,
        "concat_embeddings": True,
        "ffn": GATED_ACTIVATIONS.get(act),
        "fused_gate_up": True,
        "ffn_hidden": r.value(
            "ffn_hidden", "intermediate_size", default=4 * d if is_whole(d) else None
        ),
        "ffn_bias": r.value("ffn_bias", "add_bias_linear", default=False),
        "norms_per_block": 3,
        "shared_weight_sets": r.value("shared_weight_sets", "num_mem_blocks", default=1),
        "adapter_rank": r.value("adapter_rank", "adapter_rank", default=128),
        "qkv_adapters": r.flag("use_shared_attention_adapter", False),
        "use_projection": True,
    }
    fields: dict[str, Any] = {
        "vocab_size": r.value("vocab_size", "vocab_size", default=32000),
        "d_model": d,
        "context_length": 16384
        if long
        else r.value("context_length", "max_position_embeddings", default=4096),
        "position": "rotary" if r.flag("use_mem_rope", False) else "none",
        "norm": "rmsnorm",
        "tie_embeddings": r.value("tie_embeddings", "tie_word_embeddings", default=True),
    }
    listed = r.data.get("layers_block_type", r.data.get("layer_types"))
    key = "layers_block_type" if "layers_block_type" in r.data else "layer_types"
    n = r.value("n_layers", "num_hidden_layers", default=54)
    if listed is None:
        kind_runs = DEFAULT_LAYERS
        if n != 54:
            r.fail("num_hidden_layers", "without layers_block_type the model has 54 layers")
    else:
        kinds = hf_layers.layer_types(r, n, key)
        if kinds is None:
            return fields
        kind_runs = hf_layers.runs(["mamba" if k in MAMBA_KINDS else k for k in kinds])
    fields["n_layers"] = sum(count for _, count in kind_runs)
    hf_layers.apply(r, fields, kind_runs, {"mamba": mamba, "hybrid": hybrid}, key)
    return fields


FAMILIES = {"zamba2": zamba2}
