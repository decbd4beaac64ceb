"""Hugging Face families built on state-space mixers: mamba and falcon_mamba (Mamba v1 blocks
only), mamba2 (Mamba-2 blocks only), nemotron_h (Mamba-2, attention and MLP layers, one of them
per block) and jamba (Mamba v1 and attention mixers, MoE every few layers).

Each function reads the keys its ``transformers`` configuration class defines, with that class's
defaults, and its docstring names the tensors the family's modeling code builds (transformers
5.24, ``models/<family>/modeling_<family>.py``). The mixers' own tensors are listed in
:mod:`costcalc.tensors` (``mamba2_tensors``, ``mamba_tensors``).
"""

from __future__ import annotations

import math
from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import floored_head_dim
from costcalc.formats.families.mamba2_hybrid import time_step_limit
from costcalc.formats.families.moe import experts_without_bias, routed_experts
from costcalc.formats.hf_reader import Reader, is_whole, mlp_bias
from costcalc.formats.peft_names import FEED_FORWARD, MAMBA_REFUSED, llama_names
from costcalc.scalars import MAX_SIZE

NO_POSITION_LIMIT = MAX_SIZE
"""context_length of a model without positions and without ``max_position_embeddings``: the
recurrence itself sets no limit."""


def _context(r: Reader, default: int | None) -> Any:
    return r.value("context_length", "max_position_embeddings", default=default)


def _mamba2_sizes(r: Reader, heads: tuple[str, int], head_dim: tuple[str, int]) -> dict[str, Any]:
    """The Mamba-2 mixer keys shared by Mamba2Config and NemotronHConfig."""
    chunk_default = 256 if heads[0] == "num_heads" else 128
    return {
        "heads": r.value("mamba2", heads[0], default=heads[1]),
        "head_dim": r.value("mamba2", head_dim[0], default=head_dim[1]),
        "state": r.value("mamba2", "state_size", "ssm_state_size", default=128),
        "groups": r.value("mamba2", "n_groups", "mamba_n_groups", default=8),
        "conv_kernel": r.value("mamba2", "conv_kernel", "mamba_d_conv", default=4),
        "conv_bias": r.value("mamba2", "use_conv_bias", "mamba_conv_bias", default=True),
        "chunk_size": r.value("mamba2", "chunk_size", "mamba_chunk_size", default=chunk_default),
    }


def _mixer_only(
    r: Reader, d_model: Any, mixer: str, sizes: dict[str, Any], tie: bool
) -> dict[str, Any]:
    """A model of recurrent blocks only: one RMSNorm and the ``mixer`` of ``sizes`` per block,
    no FFN, no positions; tied as ``tie_word_embeddings`` says (default ``tie``)."""
    r.forget(mixer)
    return {
        "vocab_size": r.size("vocab_size", "vocab_size"),
        "d_model": d_model,
        "n_layers": r.size("n_layers", "num_hidden_layers"),
        "context_length": _context(r, NO_POSITION_LIMIT),
        "position": "none",
        "norm": "rmsnorm",
        "norms_per_block": 1,
        "mixer": mixer,
        mixer: sizes,
        "ffn": "none",
        "tie_embeddings": r.value("tie_embeddings", "tie_word_embeddings", default=tie),
    }


def mamba2(r: Reader) -> dict[str, Any]:
    """Mamba2ForCausalLM: ``backbone.embeddings`` (V x D); per block one RMSNorm ``norm`` (D)
    and a Mamba-2 ``mixer``: ``in_proj`` D -> 2I + 2GN + H, ``conv1d`` (I + 2GN, 1, k),
    ``dt_bias``/``A_log``/``D`` (H each), gated RMSNorm (I), ``out_proj`` I -> D, biases when
    ``use_bias`` (conv bias when ``use_conv_bias``); final ``norm_f``; ``lm_head`` (V x D),
    untied by default. H ``num_heads`` (128), P ``head_dim`` (64), I = ``expand`` x D must equal
    H P, N ``state_size`` (128), G ``n_groups`` (8), k ``conv_kernel`` (4), chunks of
    ``chunk_size`` (256). No positions (no ``max_position_embeddings``)."""
    d_model = r.size("d_model", "hidden_size")
    sizes = _mamba2_sizes(r, ("num_heads", 128), ("head_dim", 64))
    sizes["proj_bias"] = r.value("mamba2", "use_bias", default=False)
    _time_step_rank(r)  # sizes nothing in Mamba-2, but the mixer takes int() of it
    time_step_limit(r, pair=False)
    expand = r.value("mamba2", "expand", default=2)
    heads, head_dim = sizes["heads"], sizes["head_dim"]
    inner = heads * head_dim if is_whole(heads, 1) and is_whole(head_dim, 1) else None
    if (
        is_whole(d_model, 1)
        and is_whole(expand, 1)
        and inner is not None
        and expand * d_model != inner
    ):
        r.fail(
            "expand",
            f"expand x hidden_size ({expand * d_model}) must equal num_heads x head_dim ({inner})",
        )
    return _mixer_only(r, d_model, "mamba2", sizes, tie=False)


def _time_step_rank(r: Reader) -> Any:
    """``time_step_rank``: "auto" (the default), or what the mixer makes a rank of with
    ``int(config.time_step_rank)`` (a whole number, a float it truncates, a string of digits);
    anything else fails it (a problem, and None)."""
    rank = r.value("mamba", "time_step_rank", default="auto")
    if rank == "auto":
        return rank
    try:
        return int(rank)
    except (TypeError, ValueError, OverflowError):
        r.fail(
            "time_step_rank",
            f'expected "auto" or a whole number (got {rank!r}): transformers\' mixer takes '
            "int() of it and fails",
        )
        return None


def mamba(r: Reader) -> dict[str, Any]:
    """MambaForCausalLM: ``backbone.embeddings`` (V x D); per block one RMSNorm ``norm`` (D)
    and a Mamba v1 ``mixer``: ``in_proj`` D -> 2I, ``conv1d`` (I, 1, k), ``x_proj`` I -> R + 2N,
    ``dt_proj`` R -> I + bias, ``A_log`` (I x N), ``D`` (I), ``out_proj`` I -> D; biases on
    in/out_proj when ``use_bias`` (false), on the conv when ``use_conv_bias`` (true); final
    ``norm_f``; ``lm_head`` (V x D), tied by default. I = ``intermediate_size`` when the file
    gives it (MambaConfig sets int(``expand`` x D) first, then the file's keys over it), else
    int(``expand`` (2) x D); N ``state_size`` (16), R ``time_step_rank`` ("auto":
    ceil(D / 16)), k ``conv_kernel`` (4). No positions."""
    d_model = r.size("d_model", "hidden_size")
    expand = r.number("mamba", "expand", default=2)
    rank = _time_step_rank(r)
    if rank == "auto":
        rank = math.ceil(d_model / 16) if is_whole(d_model, 1) else None
    inner = int(expand * d_model) if expand is not None and is_whole(d_model, 1) else None
    sizes = {
        "inner": r.value("mamba", "intermediate_size", default=inner),
        "state": r.value("mamba", "state_size", default=16),
        "dt_rank": rank,
        "conv_kernel": r.value("mamba", "conv_kernel", default=4),
        "conv_bias": r.value("mamba", "use_conv_bias", default=True),
        "proj_bias": r.value("mamba", "use_bias", default=False),
    }
    return _mixer_only(r, d_model, "mamba", sizes, tie=True)


def falcon_mamba(r: Reader) -> dict[str, Any]:
    """FalconMambaForCausalLM: as mamba, the same keys and defaults; its mixer adds RMSNorms on
    the time step, B and C (``dt_layernorm``, ``b_layernorm``, ``c_layernorm``) that have no
    weights, so the tensors are Mamba's."""
    return mamba(r)


NEMOTRON_KINDS = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}


def nemotron_h(r: Reader) -> dict[str, Any]:
    """NemotronHForCausalLM: ``embeddings`` (V x D); each layer one RMSNorm ``norm`` (D) and
    ONE mixer, by ``hybrid_override_pattern`` (M Mamba-2, * attention, - MLP; or
    ``layers_block_type``/``layer_types``): Mamba-2 as mamba2 with I = ``mamba_num_heads`` x
    ``mamba_head_dim`` (128 x 64), ``n_groups`` (8), ``ssm_state_size`` (128), ``conv_kernel``
    (4), ``chunk_size`` (128), ``use_bias`` (false; ``in_proj`` and ``out_proj`` read it, never
    ``mamba_proj_bias``); attention
    ``q_proj``/``k_proj``/``v_proj``/``o_proj`` without biases or positions (H
    ``num_attention_heads``, K ``num_key_value_heads`` (8), d ``head_dim`` (128)); MLP
    ``up_proj`` D -> h, ``down_proj`` h -> D (``intermediate_size``, relu2, bias ``mlp_bias``);
    MoE (:func:`_nemotron_moe`); final ``norm_f``; ``lm_head`` never tied
    (NemotronHForCausalLM declares no tied weights, whatever ``tie_word_embeddings`` says). The
    layer count is the pattern's length."""
    kinds = _nemotron_kinds(r)
    sizes = _mamba2_sizes(r, ("mamba_num_heads", 128), ("mamba_head_dim", 64))
    sizes["proj_bias"] = r.value("mamba2", "use_bias", default=False)  # not mamba_proj_bias
    r.forget("mamba2")
    time_step_limit(r, pair=False)
    blocks: dict[str, dict[str, Any]] = {
        "linear_attention": {"mixer": "mamba2", "mamba2": sizes, "ffn": "none"},
        "full_attention": {
            "mixer": "attention",
            "n_heads": r.size("n_heads", "num_attention_heads"),
            "n_kv_heads": r.value("n_kv_heads", "num_key_value_heads", default=8),
            "head_dim": r.value("head_dim", "head_dim", default=128),
            "ffn": "none",
        },
        "mlp": {
            "mixer": "none",
            "ffn": "mlp",
            "ffn_hidden": r.value("ffn_hidden", "intermediate_size", default=21504),
        },
    }
    mlp_bias(r, blocks["mlp"])
    if "moe" in kinds:
        blocks["moe"] = _nemotron_moe(r, blocks["mlp"])
    fields: dict[str, Any] = {
        "vocab_size": r.size("vocab_size", "vocab_size"),
        "d_model": r.size("d_model", "hidden_size"),
        "n_layers": len(kinds) or r.size("n_layers", "num_hidden_layers"),
        "context_length": _context(r, 4096),
        "position": "none",
        "norm": "rmsnorm",
        "norms_per_block": 1,
        "qkv_bias": False,
        "attn_out_bias": False,
        "fused_qkv": False,
        "tie_embeddings": False,
    }
    hf_layers.apply(r, fields, hf_layers.runs(kinds), blocks, "hybrid_override_pattern")
    return fields


def _nemotron_moe(r: Reader, mlp: dict[str, Any]) -> dict[str, Any]:
    """NemotronHMoE: a router ``gate`` X x D, no bias (X ``n_routed_experts`` or
    ``num_local_experts``, 8; its ``e_score_correction_bias`` is a buffer, not a parameter);
    X experts, each ``up_proj`` h x E and ``down_proj`` E x h, relu2, no biases (h
    ``moe_intermediate_size``, 7688), of which a token runs ``num_experts_per_tok`` (2); E =
    D, or ``moe_latent_size`` L with ``fc1_latent_proj`` D -> L and ``fc2_latent_proj`` L -> D
    around the experts (bias ``mlp_bias``, which the experts never have); one shared expert,
    the MLP of ``moe_shared_expert_intermediate_size`` (7688; 0: ``intermediate_size``, as
    ``NemotronHMLP``'s ``intermediate_size or config.intermediate_size`` takes it), whatever
    ``n_shared_experts`` says."""
    shared = r.value("moe_shared_ffn_hidden", "moe_shared_expert_intermediate_size", default=7688)
    if shared == 0 and not isinstance(shared, bool):
        shared = mlp["ffn_hidden"]
        r.key_names["moe_shared_ffn_hidden"] = r.key_names["ffn_hidden"]
    moe = {
        **mlp,
        "ffn_hidden": None,
        "moe_experts": r.value("moe_experts", "num_local_experts", "n_routed_experts", default=8),
        "moe_top_k": r.value("moe_top_k", "num_experts_per_tok", default=2),
        "moe_ffn_hidden": r.value("moe_ffn_hidden", "moe_intermediate_size", default=7688),
        "moe_shared_ffn_hidden": shared,
        "moe_latent": r.nullable("moe_latent", "moe_latent_size", None),
    }
    experts_without_bias(mlp, moe)
    return moe


def _nemotron_kinds(r: Reader) -> list[str]:
    """Per-layer kinds: ``layer_types`` (or ``layers_block_type``), else the pattern string,
    else NemotronHConfig's default (Mamba-2, MoE, attention, MLP). A null under the alias
    ``layer_types`` (no field of the class) is set after ``__post_init__`` derives the layers,
    so ``layers_block_type`` ends null and ``validate_layer_type`` refuses the file."""
    if dict.__contains__(r.data, "layer_types") and r.data.get("layer_types") is None:
        r.fail(
            "layer_types",
            "null: transformers refuses the file (NemotronHConfig sets this alias of "
            "layers_block_type after deriving the layers, so they end null, which its "
            "validate_layer_type refuses; leave the key out)",
        )
        return []
    for key in ("layer_types", "layers_block_type"):
        if r.data.get(key) is not None:
            return hf_layers.layer_types(r, None, key) or []
    pattern = r.data.get("hybrid_override_pattern")
    if pattern is None:
        return ["linear_attention", "moe", "full_attention", "mlp"]
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(NEMOTRON_KINDS):
        r.fail("hybrid_override_pattern", "expected a string of M, E, * and - (one per layer)")
        return []
    if len(pattern) > hf_layers.MAX_LISTED_LAYERS:
        r.fail("hybrid_override_pattern", "too many layers")
        return []
    r.key_names["layers"] = r.name("hybrid_override_pattern")
    return [NEMOTRON_KINDS[char] for char in pattern]


def jamba(r: Reader) -> dict[str, Any]:
    """JambaForCausalLM: ``embed_tokens`` (V x D); per layer ``input_layernorm`` and
    ``pre_ff_layernorm`` (RMSNorm, D each), a mixer and an FFN. The mixer is attention
    (``q_proj``/``k_proj``/``v_proj``/``o_proj``, no biases, no positions; K ``num_key_value_heads``
    (8), d ``head_dim`` when the file gives one, else D // H, floored) on layers i with i %
    ``attn_layer_period`` (8) == ``attn_layer_offset`` (4), else Mamba v1: ``in_proj`` D -> 2I,
    ``conv1d`` (I, 1, k), ``x_proj`` I -> R + 2N, ``dt_proj`` R -> I + bias, ``A_log`` (I x N),
    ``D`` (I), ``out_proj`` I -> D, RMSNorms ``dt_layernorm`` (R), ``b_layernorm``, ``c_layernorm``
    (N); I = ``mamba_expand`` (2) x D, N ``mamba_d_state`` (16), R ``mamba_dt_rank`` ("auto": ceil(D
    / 16)), k ``mamba_d_conv`` (4), biases ``mamba_conv_bias`` (true) and ``mamba_proj_bias``
    (false). The FFN is a SwiGLU MLP (``intermediate_size``), or on layers i %
    ``expert_layer_period`` (2) == ``expert_layer_offset`` (1) a mixture of ``num_experts`` (16)
    such experts with a router (X x D), ``num_experts_per_tok`` (2) active; final
    ``final_layernorm``; ``lm_head`` untied by default."""
    d_model = r.size("d_model", "hidden_size")
    n_layers = r.size("n_layers", "num_hidden_layers")
    rank = r.value("mamba", "mamba_dt_rank", default="auto")
    expand = r.whole("mamba", "mamba_expand", default=2)
    if rank == "auto":
        rank = math.ceil(d_model / 16) if is_whole(d_model, 1) else None
    mamba = {
        "inner": expand * d_model if expand is not None and is_whole(d_model, 1) else None,
        "state": r.value("mamba", "mamba_d_state", default=16),
        "dt_rank": rank,
        "conv_kernel": r.value("mamba", "mamba_d_conv", default=4),
        "conv_bias": r.value("mamba", "mamba_conv_bias", default=True),
        "proj_bias": r.value("mamba", "mamba_proj_bias", default=False),
        "dt_norms": True,
    }
    r.forget("mamba")
    attention = {
        "mixer": "attention",
        "n_heads": r.size("n_heads", "num_attention_heads"),
        "n_kv_heads": r.value("n_kv_heads", "num_key_value_heads", default=8),
        "head_dim": r.value("head_dim", "head_dim", default=None),
    }
    floored_head_dim(r, attention, d_model)
    experts = routed_experts(r, ("num_experts",), ("num_experts_per_tok",), (16, 2))
    fields: dict[str, Any] = {
        "vocab_size": r.size("vocab_size", "vocab_size"),
        "d_model": d_model,
        "n_layers": n_layers,
        "context_length": _context(r, 262144),
        "position": "none",
        "norm": "rmsnorm",
        "ffn": "swiglu",
        "ffn_hidden": r.value("ffn_hidden", "intermediate_size", default=14336),
        "ffn_bias": False,
        "qkv_bias": False,
        "attn_out_bias": False,
        "fused_qkv": False,
        "tie_embeddings": r.value("tie_embeddings", "tie_word_embeddings", default=False),
    }
    attn = _period(r, "attn_layer_period", 8, "attn_layer_offset", 4)
    moe = _period(r, "expert_layer_period", 2, "expert_layer_offset", 1)
    n = hf_layers.count_of(n_layers)
    if attn is None or moe is None or n is None:
        return fields
    # One cycle of lcm(periods) layers, each (attention?, MoE?), repeats over the model.
    period = math.lcm(attn[0], moe[0])
    if period > hf_layers.MAX_LISTED_LAYERS:
        r.fail("attn_layer_period", "the layer pattern's period is too long")
        return fields
    kinds = [(i % attn[0] == attn[1], i % moe[0] == moe[1]) for i in range(min(period, n))]
    # JambaAttentionDecoderLayer, JambaMambaDecoderLayer: a JambaSparseMoeBlock only with
    # num_experts > 1, else the dense JambaMLP (no router)
    sparse = experts if experts.get("moe_experts") != 1 else {}
    blocks = {
        f"{int(a)}{int(e)}": {
            **(attention if a else {"mixer": "mamba", "mamba": mamba}),
            **(sparse if e else {}),
        }
        for a, e in kinds
    }
    pattern = hf_layers.runs([f"{int(a)}{int(e)}" for a, e in kinds])
    hf_layers.set_layers(r, fields, n, hf_layers.Layout(pattern, cycles=True), blocks)
    return fields


def _period(
    r: Reader, period_key: str, period: int, offset_key: str, offset: int
) -> tuple[int, int] | None:
    """A (period, offset) layer rule, checked as JambaConfig does: offset < period."""
    p = r.count(period_key, period)
    o = r.value("layers", offset_key, default=offset)
    if not is_whole(o, 0) or o >= p:
        r.fail(offset_key, f"expected a whole number from 0 to {period_key} - 1 (got {o!r})")
        return None
    return p, o


FAMILIES = {
    "falcon_mamba": falcon_mamba,
    "jamba": jamba,
    "mamba": mamba,
    "mamba2": mamba2,
    "nemotron_h": nemotron_h,
}


PEFT_NAMES = {
    **dict.fromkeys(
        ("falcon_mamba", "mamba", "mamba2"),
        llama_names(renames={"embed_tokens": "embeddings"}, refused=MAMBA_REFUSED),
    ),
    "jamba": llama_names({**FEED_FORWARD, "mixer": "mamba"}),
    "nemotron_h": llama_names(
        {"attn": "mixer", "mlp": "mixer"}, {"embed_tokens": "embeddings"}, refused=MAMBA_REFUSED
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
