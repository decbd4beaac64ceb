"""Hugging Face families with rotary positions and LayerNorm (weight and bias): starcoder2,
stablelm, persimmon, nemotron, phi and jais2.

Each function reads the keys its ``transformers`` configuration class defines, with that class's
defaults, and its docstring names the tensors the family's modeling code builds (transformers
5.24, ``models/<family>/modeling_<family>.py``). Every one has ``embed_tokens`` (V x D), two
LayerNorms per block and an ``lm_head`` (V x D) without bias (unless said otherwise), a final
LayerNorm; D is ``hidden_size``, h ``intermediate_size``, H heads, K key/value heads, d the head
width.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import floored_head_dim
from costcalc.formats.hf_reader import (
    Reader,
    attention_bias,
    linear_bias,
    mlp_bias,
    rotary_dim,
    standard_sizes,
)
from costcalc.formats.peft_names import GPT2_MLP, LLAMA, NEOX_MLP, llama_names


def _rotary_layernorm(
    r: Reader, *, kv_heads: int | None, head_dim: bool, tie: bool, factor: float
) -> dict[str, Any]:
    """The common part: sizes, K (``num_key_value_heads``, with the family's default), d
    (``head_dim`` when the family reads it, else D / H, floored where H does not divide D:
    :func:`~costcalc.formats.families.llama.floored_head_dim`), h, rotary on
    ``partial_rotary_factor`` of each head, LayerNorm, tying."""
    fields = standard_sizes(r)
    fields.update(
        n_kv_heads=r.value("n_kv_heads", "num_key_value_heads", default=kv_heads),
        head_dim=r.value("head_dim", "head_dim", default=None) if head_dim else None,
        position="rotary",
        ffn_hidden=r.size("ffn_hidden", "intermediate_size"),
        fused_qkv=False,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=tie),
    )
    if head_dim:
        floored_head_dim(r, fields)
    fields["rotary_dim"] = rotary_dim(r, fields, ("partial_rotary_factor",), factor)
    return fields


def starcoder2(r: Reader) -> dict[str, Any]:
    """Starcoder2ForCausalLM: ``self_attn.q_proj`` (D x H d), ``k_proj``/``v_proj``
    (D x K d), ``o_proj`` (H d x D), a plain MLP ``mlp.c_fc`` (D x h), ``mlp.c_proj`` (h x D),
    every linear with a bias when ``use_bias`` (default true); ``input_layernorm``,
    ``post_attention_layernorm``, final ``norm``; 2 key/value heads unless given; every layer
    attends within ``sliding_window`` (default none); tied by default."""
    fields = _rotary_layernorm(r, kv_heads=2, head_dim=True, tie=True, factor=1.0)
    linear_bias(r, fields, "use_bias", default=True)
    fields["sliding_window"] = r.value("sliding_window", "sliding_window", default=None)
    return fields


def stablelm(r: Reader) -> dict[str, Any]:
    """StableLmForCausalLM (StableLM 2): ``self_attn.q_proj`` (D x D), ``k_proj``/``v_proj``
    (D x K d), biases when ``use_qkv_bias`` (default false), ``o_proj`` (D x D, no bias); a
    SwiGLU MLP ``gate_proj``, ``up_proj`` (D x h), ``down_proj`` (h x D), no biases;
    ``input_layernorm`` and, unless ``use_parallel_residual``, ``post_attention_layernorm``;
    final ``norm``; d = D / H, 32 key/value heads unless given; rotary on
    ``partial_rotary_factor`` (default 0.25); untied by default. With ``qk_layernorm`` (default
    false; StableLM 2 12B) ``q_layernorm`` and ``k_layernorm``, a bias-free LayerNorm of d for
    each query and each key/value head (``StableLmLayerNormPerHead``)."""
    fields = _rotary_layernorm(r, kv_heads=32, head_dim=False, tie=False, factor=0.25)
    if r.flag("qk_layernorm", False):
        fields["qk_norm"] = "per_head"
        r.key_names["qk_norm"] = r.name("qk_layernorm")
    parallel = r.flag("use_parallel_residual", False)
    fields.update(
        qkv_bias=r.value("qkv_bias", "use_qkv_bias", default=False),
        attn_out_bias=False,
        ffn="swiglu",
        ffn_bias=False,
        norms_per_block=1 if parallel else 2,
    )
    if parallel:
        r.key_names["norms_per_block"] = r.name("use_parallel_residual")
    return fields


def persimmon(r: Reader) -> dict[str, Any]:
    """PersimmonForCausalLM: fused ``self_attn.query_key_value`` (D x 3D + 3D), ``dense``
    (D x D + D), with ``qk_layernorm`` (default true) a LayerNorm of d on queries and on keys
    (``q_layernorm``, ``k_layernorm``, weight and bias); a plain MLP ``dense_h_to_4h``
    (D x h + h), ``dense_4h_to_h`` (h x D + D); ``input_layernorm``,
    ``post_attention_layernorm``, ``final_layernorm``; d = D / H, no key/value grouping; rotary
    on ``partial_rotary_factor`` (default 0.5); untied by default."""
    fields = _rotary_layernorm(r, kv_heads=None, head_dim=False, tie=False, factor=0.5)
    fields["n_kv_heads"] = None
    r.key_names.pop("n_kv_heads", None)
    fields["fused_qkv"] = True
    if r.flag("qk_layernorm", True):
        fields["qk_norm"] = "head"
        r.key_names["qk_norm"] = r.name("qk_layernorm")
    return fields


def nemotron(r: Reader) -> dict[str, Any]:
    """NemotronForCausalLM (Nemotron, Minitron): ``self_attn.q_proj`` (D x H d),
    ``k_proj``/``v_proj`` (D x K d), ``o_proj`` (H d x D), biases when ``attention_bias``; a
    plain MLP ``up_proj`` (D x h), ``down_proj`` (h x D), biases when ``mlp_bias``; LayerNorm1P
    (weight and bias) ``input_layernorm``, ``post_attention_layernorm``, final ``norm``; d is
    ``head_dim`` or D / H, K ``num_key_value_heads`` or H; rotary on ``partial_rotary_factor``
    (default 0.5); untied by default."""
    fields = _rotary_layernorm(r, kv_heads=None, head_dim=True, tie=False, factor=0.5)
    attention_bias(r, fields)
    mlp_bias(r, fields)
    return fields


def phi(r: Reader) -> dict[str, Any]:
    """PhiForCausalLM (Phi-1, Phi-1.5, Phi-2): ONE ``input_layernorm`` per block (attention and
    MLP run in parallel on it), ``self_attn.q_proj`` (D x H d), ``k_proj``/``v_proj``
    (D x K d), ``dense`` (H d x D), all with bias, ``mlp.fc1`` (D x h + h), ``mlp.fc2``
    (h x D + D); ``final_layernorm``; ``lm_head`` (V x D) WITH a bias, untied by default; d is
    ``head_dim`` or D / H, K ``num_key_value_heads`` or H; rotary on ``partial_rotary_factor``
    (default 0.5) of each head; with ``qk_layernorm`` (default false) a LayerNorm on queries and
    on keys (``q_layernorm``, ``k_layernorm``, weight and bias) of D / H, refused where
    ``head_dim`` gives the heads another width (transformers builds those norms, but its
    forward cannot apply them)."""
    fields = _rotary_layernorm(r, kv_heads=None, head_dim=True, tie=False, factor=0.5)
    if r.flag("qk_layernorm", False):
        _phi_qk_layernorm(r, fields)
    fields.update(norms_per_block=1, lm_head_bias=True)
    return fields


def _phi_qk_layernorm(r: Reader, fields: dict[str, Any]) -> None:
    """PhiAttention's ``q_layernorm`` and ``k_layernorm``, ``nn.LayerNorm(hidden_size //
    num_attention_heads)`` each: the head norms of ``qk_norm: head`` when the heads are that
    wide."""
    D, H, d = fields["d_model"], fields["n_heads"], fields["head_dim"]
    sizes = (D, H, d)  # head_dim None: D / H, which the spec checks
    if all(type(n) is int and n > 0 for n in sizes) and d != D // H:
        r.unsupported(
            "qk_layernorm",
            f"LayerNorms of hidden_size / num_attention_heads = {D // H:,} on heads of "
            f"head_dim {d:,}",
        )
        return
    fields["qk_norm"] = "head"
    r.key_names["qk_norm"] = r.name("qk_layernorm")


def jais2(r: Reader) -> dict[str, Any]:
    """Jais2ForCausalLM (Jais 2): ``self_attn.q_proj`` (D x H d), ``k_proj``/``v_proj``
    (D x K d), ``o_proj`` (H d x D), biases when ``attention_bias`` (default true); a plain MLP
    ``up_proj`` (D x h), ``down_proj`` (h x D) (relu2), biases when ``mlp_bias`` (default
    true); ``nn.LayerNorm`` ``input_layernorm``, ``post_attention_layernorm``, final ``norm``;
    d is ``head_dim`` or D / H, K ``num_key_value_heads`` or H; untied by default."""
    fields = _rotary_layernorm(r, kv_heads=None, head_dim=True, tie=False, factor=1.0)
    attention_bias(r, fields, default=True)
    mlp_bias(r, fields, default=True)
    return fields


FAMILIES = {
    "jais2": jais2,
    "nemotron": nemotron,
    "persimmon": persimmon,
    "phi": phi,
    "stablelm": stablelm,
    "starcoder2": starcoder2,
}


PEFT_NAMES = {
    **dict.fromkeys(("jais2", "nemotron", "stablelm"), LLAMA),
    "persimmon": llama_names(
        renames={
            "attn.qkv_proj": "self_attn.query_key_value",
            "attn.o_proj": "self_attn.dense",
            **NEOX_MLP,
        }
    ),
    "phi": llama_names(
        renames={
            "attn.o_proj": "self_attn.dense",
            "mlp.up_proj": "mlp.fc1",
            "mlp.down_proj": "mlp.fc2",
        }
    ),
    "starcoder2": llama_names(renames=GPT2_MLP),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
