"""Hugging Face families with LayerNorm (weight and bias) and a plain two-matrix MLP:
gpt2 (and gpt-sw3, which transformers builds as GPT-2), openai-gpt, gpt_neox, gpt_neox_japanese
and opt.

Each function reads the keys its ``transformers`` configuration class defines, with that class's
defaults, and its docstring names the tensors the family's modeling code builds (transformers
5.24, ``models/<family>/modeling_<family>.py``). D is ``hidden_size`` (``n_embd``), h the MLP
width, V the vocabulary.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.hf_reader import (
    Reader,
    attention_bias,
    cross_attention,
    is_whole,
    linear_bias,
    rotary_dim,
    standard_sizes,
)
from costcalc.formats.peft_names import GPT2, GPT2_MLP, NEOX_MLP, OPT_RENAMES, llama_names

GPT_KEYS: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size",),
    "d_model": ("n_embd", "hidden_size"),
    "n_layers": ("n_layer", "num_hidden_layers"),
    "n_heads": ("n_head", "num_attention_heads"),
    "context_length": ("n_positions", "max_position_embeddings"),
}
"""GPT-2 and GPT-1 keys; the second names are the ``attribute_map`` aliases transformers accepts."""


def gpt2(r: Reader) -> dict[str, Any]:
    """GPT2LMHeadModel: ``wte`` (V x D), ``wpe`` (n_positions x D); per block ``ln_1``,
    ``attn.c_attn`` (D x 3D + 3D, fused q/k/v), ``attn.c_proj`` (D x D + D), ``ln_2``,
    ``mlp.c_fc`` (D x h + h, h = ``n_inner`` or 4D), ``mlp.c_proj`` (h x D + D); final ``ln_f``;
    ``lm_head`` without bias, tied to ``wte`` unless ``tie_word_embeddings`` is false. With
    ``add_cross_attention`` each block adds ``crossattention`` (``q_attn`` D x D, ``c_attn``
    D x 2D, ``c_proj``, biased) after ``ln_cross_attn``."""
    fields = {
        **standard_sizes(r, GPT_KEYS),
        "ffn_hidden": r.value("ffn_hidden", "n_inner", default=None),
        "tie_embeddings": r.value("tie_embeddings", "tie_word_embeddings", default=True),
    }
    cross_attention(r, fields)
    return fields


def openai_gpt(r: Reader) -> dict[str, Any]:
    """OpenAIGPTLMHeadModel (GPT-1): ``tokens_embed`` (V x D), ``positions_embed``
    (n_positions x D); per block ``attn.c_attn`` (D x 3D + 3D), ``attn.c_proj``, ``ln_1``,
    ``mlp.c_fc`` (D x 4D + 4D), ``mlp.c_proj``, ``ln_2`` (post-norm); no final norm; ``lm_head``
    without bias, tied to ``tokens_embed``. ``afn`` (gelu) names the MLP's activation, one of
    the modeling code's ``ACT_FNS`` (relu, silu, gelu, swish): ``MLP`` looks it up there, and
    fails on any other name (a KeyError)."""
    afn = r.value("ffn_activation", "afn", default="gelu")
    if afn not in OPENAI_GPT_ACTIVATIONS:
        r.fail(
            "afn",
            f"expected one of {', '.join(OPENAI_GPT_ACTIVATIONS)} (got {afn!r}): transformers "
            "fails to build the model (OpenAIGPT's MLP looks the name up in ACT_FNS)",
        )
    r.forget("ffn_activation")
    return {
        **standard_sizes(r, GPT_KEYS),
        "final_norm": False,
        "tie_embeddings": r.value("tie_embeddings", "tie_word_embeddings", default=True),
    }


OPENAI_GPT_ACTIVATIONS = ("relu", "silu", "gelu", "swish")
"""The activations openai-gpt's ``ACT_FNS`` holds (models/openai/modeling_openai.py)."""


def gpt_neox(r: Reader) -> dict[str, Any]:
    """GPTNeoXForCausalLM (Pythia): ``embed_in`` (V x D); per block ``input_layernorm``,
    ``post_attention_layernorm`` (both kept with ``use_parallel_residual``),
    ``attention.query_key_value`` (D x 3D, fused), ``attention.dense`` (D x D), both with bias when
    ``attention_bias`` (default true), ``mlp.dense_h_to_4h`` (D x h + h), ``mlp.dense_4h_to_h``
    (h x D + D); ``final_layer_norm``; ``embed_out`` (V x D, no bias), untied by default. Rotary
    on ``rotary_pct`` (default 0.25) of each head."""
    fields = standard_sizes(r)
    attention_bias(r, fields, default=True)
    fields.update(
        position="rotary",
        ffn_hidden=r.size("ffn_hidden", "intermediate_size"),
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=False),
    )
    fields["rotary_dim"] = rotary_dim(r, fields, ("partial_rotary_factor", "rotary_pct"), 0.25)
    return fields


def gpt_neox_japanese(r: Reader) -> dict[str, Any]:
    """GPTNeoXJapaneseForCausalLM: ``embed_in`` (V x D); per block ``input_layernorm``,
    ``post_attention_layernorm``, ``attention.query_key_value`` (D x 3D) and ``attention.dense``
    (D x D), no biases, except a ``dense_bias`` (D) in the LAST layer's attention only;
    ``mlp.dense_h_to_4h`` (D x h), ``mlp.dense_4h_to_h`` (h x D), no biases, h =
    ``int(D x intermediate_multiple_size)`` (default 4); ``final_layer_norm``; ``embed_out``
    (V x D, no bias), tied by default. Rotary on ``partial_rotary_factor`` (or ``rotary_pct``,
    default 1) of each head."""
    fields = standard_sizes(r)
    multiple = r.number("ffn_hidden", "intermediate_multiple_size", default=4)
    width = fields["d_model"]
    if is_whole(width, 1) and multiple is not None:
        fields["ffn_hidden"] = int(width * multiple)
    fields.update(
        position="rotary",
        qkv_bias=False,
        attn_out_bias=False,
        ffn_bias=False,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    fields["rotary_dim"] = rotary_dim(r, fields, ("partial_rotary_factor", "rotary_pct"), 1.0)
    n = fields["n_layers"]
    if isinstance(n, int) and n > 1:
        fields["layers"] = [{"count": n - 1}, {"count": 1, "attn_out_bias": True}]
    elif n == 1:
        fields["attn_out_bias"] = True
    return fields


def opt(r: Reader) -> dict[str, Any]:
    """OPTForCausalLM: ``embed_tokens`` (V x E, E = ``word_embed_proj_dim``, default D),
    ``embed_positions`` ((max_position_embeddings + 2) x D: OPT's learned table keeps an offset
    of 2), ``project_in`` (E x D) and ``project_out`` (D x E) without bias when E != D; per block
    ``self_attn.q_proj/k_proj/v_proj/out_proj`` (D x D each), ``fc1`` (D x ``ffn_dim``),
    ``fc2``, all with bias when ``enable_bias``, ``self_attn_layer_norm`` and
    ``final_layer_norm``; a model-level ``final_layer_norm`` only when ``do_layer_norm_before``
    (OPT-350m is post-norm and has none); ``lm_head`` (V x E, no bias), tied by default. With
    ``layer_norm_elementwise_affine`` false every LayerNorm holds no weight and no bias
    (``nn.LayerNorm(..., elementwise_affine=False)``): no norm parameters (costcalc's
    ``norms_per_block`` 0, no final norm)."""
    fields = standard_sizes(r)
    width = fields["d_model"]
    embedding_dim = r.value("embedding_dim", "word_embed_proj_dim", default=None)
    linear_bias(r, fields, "enable_bias", default=True)
    affine = r.flag("layer_norm_elementwise_affine", True)
    pre_norm = r.flag("do_layer_norm_before", True)
    remove_final = r.flag("_remove_final_layer_norm", False)
    if not affine:
        fields["norms_per_block"] = 0
    fields.update(
        position_offset=2,
        embedding_dim=None if embedding_dim == width else embedding_dim,
        ffn_hidden=r.size("ffn_hidden", "ffn_dim"),
        final_norm=pre_norm and not remove_final and affine,
        fused_qkv=False,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    return fields


FAMILIES = {
    "gpt2": gpt2,
    "gpt-sw3": gpt2,
    "gpt_neox": gpt_neox,
    "gpt_neox_japanese": gpt_neox_japanese,
    "openai-gpt": openai_gpt,
    "opt": opt,
}


NEOX_RENAMES = {
    "attn.qkv_proj": "attention.query_key_value",
    "attn.o_proj": "attention.dense",
    "embed_tokens": "embed_in",
    **NEOX_MLP,
}
PEFT_NAMES = {
    **dict.fromkeys(("gpt2", "gpt-sw3"), GPT2),
    "gpt_neox": llama_names({"attn": "attention"}, NEOX_RENAMES),
    "gpt_neox_japanese": llama_names(
        {"attn": "attention"},
        {**NEOX_RENAMES, "lm_head": "embed_out"},
        loose_biases=("attn.o_proj",),
    ),
    "openai-gpt": llama_names(
        {"attn": "attn"},
        {
            "attn.qkv_proj": "attn.c_attn",
            "attn.o_proj": "attn.c_proj",
            **GPT2_MLP,
            "embed_tokens": "tokens_embed",
            "embed_positions": "positions_embed",
        },
    ),
    "opt": llama_names(renames=OPT_RENAMES),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
