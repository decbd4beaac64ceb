"""Hugging Face families that are Llama with a twist: granite, helium, seed_oss, arcee, apertus,
apertus1p5_text, hyperclovax, cohere, cohere2 and cohere_compass_text.

Each function reads the keys its ``transformers`` configuration class defines, with that class's
defaults, and its docstring names what the family's modeling code builds beyond the shared
layout of :func:`~costcalc.formats.families.llama.llama_layout` (transformers 5.24,
``models/<family>/modeling_<family>.py``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import heads_span_width, llama, llama_layout
from costcalc.formats.hf_reader import Reader, attention_bias, blocks, mlp_bias
from costcalc.formats.peft_names import LLAMA


def granite(r: Reader) -> dict[str, Any]:
    """GraniteForCausalLM: Llama's tensors exactly (q/k/v/o bias when ``attention_bias``,
    gate/up/down bias when ``mlp_bias``, untied by default); its multipliers
    (``embedding_multiplier``, ``residual_multiplier``, ``attention_multiplier``,
    ``logits_scaling``) scale activations and hold no parameters."""
    return llama(r)


def helium(r: Reader) -> dict[str, Any]:
    """HeliumForCausalLM: the shared layout with ``head_dim`` 128 and 20 key/value heads unless
    given, a bias on q/k/v when ``attention_bias`` (``o_proj`` never has one), gate/up/down bias
    when ``mlp_bias``; untied by default. ``o_proj`` is built D x D: a ``head_dim`` with H d
    other than D is refused (transformers builds it, but its forward cannot run)."""
    fields = llama_layout(r, kv_heads=20, head_dim=128)
    heads_span_width(r, fields, "HeliumAttention builds o_proj hidden_size x hidden_size")
    fields["qkv_bias"] = r.value("qkv_bias", "attention_bias", default=False)
    mlp_bias(r, fields)
    return fields


def seed_oss(r: Reader) -> dict[str, Any]:
    """SeedOssForCausalLM: the shared layout with ``head_dim`` 128 and 8 key/value heads unless
    given, a bias on q/k/v when ``attention_bias`` (default TRUE), on ``o_proj`` when
    ``attention_out_bias`` (default false), on gate/up/down when ``mlp_bias``; untied by
    default."""
    fields = llama_layout(r, kv_heads=8, head_dim=128)
    fields["qkv_bias"] = r.value("qkv_bias", "attention_bias", default=True)
    fields["attn_out_bias"] = r.value("attn_out_bias", "attention_out_bias", default=False)
    mlp_bias(r, fields)
    return fields


def arcee(r: Reader, **defaults: Any) -> dict[str, Any]:
    """ArceeForCausalLM (AFM): the shared attention and norms, but a PLAIN MLP: ``up_proj``
    (D x h) and ``down_proj`` (h x D), bias when ``mlp_bias``, activation ``hidden_act``
    (default relu2, no parameters); q/k/v/o bias when ``attention_bias``; untied by default.
    ``defaults``: another configuration class's defaults for :func:`llama_layout`."""
    fields = llama_layout(r, act="relu2", **defaults)
    attention_bias(r, fields)
    fields["ffn"] = "mlp"
    mlp_bias(r, fields)
    return fields


def apertus(r: Reader) -> dict[str, Any]:
    """ApertusForCausalLM: the shared attention with an RMSNorm of head_dim on queries and keys
    (``q_norm``, ``k_norm``), q/k/v/o bias when ``attention_bias``; a PLAIN MLP without biases,
    ``up_proj`` (D x h), ``down_proj`` (h x D); its xIELU activation (``hidden_act`` xielu, the
    default) learns two scalars per layer, ``act_fn.alpha_p`` and ``act_fn.alpha_n``; norms
    ``attention_layernorm`` and ``feedforward_layernorm``; untied by default."""
    fields = llama_layout(r, act="xielu")
    attention_bias(r, fields)
    act = r.value("ffn_act_params", "hidden_act", default="xielu")
    fields.update(ffn="mlp", qk_norm="head", ffn_act_params=2 if act == "xielu" else 0)
    return fields


def apertus1p5_text(r: Reader) -> dict[str, Any]:
    """Apertus1p5TextForCausalLM (Apertus 1.5's text decoder): Apertus' layers and token
    table (``vocab_size`` rows: text plus image and audio codes), and an LM head of
    ``output_vocab_size`` rows when set (the text ids its released checkpoints keep); the
    logits are as wide as the head. Untied by default; a tied head is the token table itself,
    whatever ``output_vocab_size`` says."""
    fields = apertus(r)
    if not fields["tie_embeddings"]:
        fields["head_rows"] = r.value("head_rows", "output_vocab_size", default=None)
    return fields


def hyperclovax(r: Reader) -> dict[str, Any]:
    """HyperCLOVAXForCausalLM (HyperCLOVA X SEED Think): Llama's tensors (q/k/v/o bias when
    ``attention_bias``, gate/up/down bias when ``mlp_bias``, untied by default) with Peri-LN:
    with ``use_post_norm`` (default true) RMSNorms ``post_norm1`` and ``post_norm2`` (D each)
    on the attention and MLP outputs, four norms per block; its muP multipliers
    (``embedding_multiplier``, ``residual_multiplier``, ``attention_multiplier``,
    ``logits_scaling``) scale activations and hold no parameters."""
    fields = llama(r)
    if r.flag("use_post_norm", True):
        fields["norms_per_block"] = 4
        r.key_names["norms_per_block"] = r.name("use_post_norm")
    return fields


def cohere(r: Reader) -> dict[str, Any]:
    """CohereForCausalLM (Command R, Aya 23): the shared projections, but ONE
    ``input_layernorm`` per block (attention and MLP in parallel) and a final ``norm``, both
    LayerNorms with a weight and no bias; with ``use_qk_norm`` a LayerNorm on queries (H x d)
    and keys (K x d), weights only; q/k/v/o bias when ``attention_bias``; tied by default."""
    fields = _cohere_layout(r)
    if r.flag("use_qk_norm", False):
        fields["qk_norm"] = "full"
        r.key_names["qk_norm"] = r.name("use_qk_norm")
    return fields


def cohere2(r: Reader) -> dict[str, Any]:
    """Cohere2ForCausalLM (Command R7B): Cohere's block without q/k norms; ``head_dim`` D / H unless
    the file gives one (``__post_init__`` sets D / H, then the file's keys that are no field of the
    class, ``head_dim`` among them, are set over it). Layers attend within ``sliding_window``
    (default 4,096) where ``layer_types`` says ``sliding_attention``; without it, every
    ``sliding_window_pattern``-th layer (default 4) is full and the others slide. Only sliding
    layers rotate queries and keys (``if self.sliding_window is not None:
    apply_rotary_pos_emb``): with none, the model has no positions, with a note."""
    fields = _cohere2(r, hf_layers.full_every(r, 4, "sliding_window_pattern"))
    if all(block.get("sliding_window") is None for _, block in blocks(fields)):
        fields["position"] = "none"
        r.note(
            "no layer slides: Cohere2's attention rotates queries and keys on sliding layers "
            "only, so no layer takes positions."
        )
    return fields


def cohere_compass_text(r: Reader) -> dict[str, Any]:
    """CohereCompassForCausalLM (the text decoder of CohereLabs' North vision models): Command
    R7B's block as cohere2 (``rope_parameters`` per layer type, a type without one has no
    positions: no parameters either way); every layer attends fully unless ``layer_types``
    marks it ``sliding_attention`` (within ``sliding_window``, default 4,096)."""
    return _cohere2(r, lambda n: hf_layers.Layout([("full_attention", n)]))


def _cohere2(r: Reader, rule: hf_layers.Rule) -> dict[str, Any]:
    """Cohere2's layout (``head_dim`` D / H unless given), the layers ``layer_types`` lists or
    the family's ``rule`` says attending within ``sliding_window`` (4,096)."""
    fields = _cohere_layout(r)
    window = r.value("sliding_window", "sliding_window", default=4096)
    hf_layers.attention_layers(r, fields, window, rule)
    return fields


def _cohere_layout(r: Reader) -> dict[str, Any]:
    """Command R's block: the shared projections, one weight-only LayerNorm per block, tied."""
    fields = llama_layout(r, tie=True)
    attention_bias(r, fields)
    fields.update(norm="layernorm", norm_bias=False, norms_per_block=1)
    return fields


FAMILIES = {
    "apertus": apertus,
    "apertus1p5_text": apertus1p5_text,
    "arcee": arcee,
    "cohere": cohere,
    "cohere2": cohere2,
    "cohere_compass_text": cohere_compass_text,
    "granite": granite,
    "helium": helium,
    "hyperclovax": hyperclovax,
    "seed_oss": seed_oss,
}


PEFT_NAMES = dict.fromkeys(FAMILIES, LLAMA)
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
