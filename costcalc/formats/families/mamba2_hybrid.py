"""Hugging Face hybrids of Mamba-2 and attention with an FFN in every layer: bamba and
granitemoehybrid (Granite 4.0), whose layers hold one mixer or the other, and falcon_h1, whose
layers run both side by side.

Each function reads the keys its ``transformers`` configuration class defines, with that class's
defaults, and its docstring names the tensors the family's modeling code builds (transformers
5.24, ``models/<family>/modeling_<family>.py``). The Mamba-2 mixer's own tensors are listed in
:mod:`costcalc.tensors` (``mamba2_tensors``).
"""

from __future__ import annotations

from typing import Any

from costcalc.files import FLOAT_TAG, NON_FINITE
from costcalc.formats import hf_layers
from costcalc.formats.families.llama import floored_head_dim
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole, mlp_bias, standard_sizes
from costcalc.formats.peft_names import FEED_FORWARD, GRANITE_SHARED_MLP, MAMBA_REFUSED, llama_names

MAMBA_KINDS = ("linear_attention", "mamba")
ATTENTION_KINDS = ("full_attention", "attention")
"""Layer types of the Mamba-2 and attention layers (``mamba`` and ``attention`` are
transformers' legacy names, which it remaps)."""


MAMBA_DEFAULTS = {"mamba_expand": "2", "mamba_d_head": '"auto": I // H'}
"""The class defaults of the keys a null is refused for, as the error shows them."""


def mamba2_mixer(r: Reader, d_model: Any, inner: Any = None) -> dict[str, Any]:
    """The Mamba-2 mixer as Bamba, Granite 4.0 and Falcon-H1 key it: I = ``inner`` when the
    family gives it, else int(``mamba_expand`` (2) x D), H ``mamba_n_heads`` (128), P
    ``mamba_d_head`` ("auto": I // H; H P must equal I), N ``mamba_d_state`` (256), G
    ``mamba_n_groups`` (1), k ``mamba_d_conv`` (4), biases ``mamba_conv_bias`` (true) and
    ``mamba_proj_bias`` (false; a null builds none: ``bias=config.mamba_conv_bias``), chunks
    ``mamba_chunk_size`` (256). A null ``mamba_expand``
    (where it sizes I) or ``mamba_d_head`` is refused: the classes' ``validate_architecture``
    multiplies them (Bamba's, GraniteMoeHybrid's, Falcon-H1's: ``mamba_expand * hidden_size``,
    ``mamba_d_head * mamba_n_heads``) and fails."""
    nulls = ("mamba_d_head",) if inner is not None else ("mamba_expand", "mamba_d_head")
    for key in nulls:
        if key in r.data and r.data[key] is None:
            default = MAMBA_DEFAULTS[key]
            r.refused_by_class(
                key, f"null, which it multiplies (leave the key out for its default, {default})"
            )
    expand = r.number("mamba2", "mamba_expand", default=2) if inner is None else None
    heads = r.value("mamba2", "mamba_n_heads", default=128)
    head_dim = r.value("mamba2", "mamba_d_head", default="auto")
    if expand is not None and is_whole(d_model, 1):
        inner = int(expand * d_model)
    if not is_whole(inner, 1):
        inner = None
    if head_dim == "auto":
        head_dim = inner // heads if inner is not None and is_whole(heads, 1) else None
    whole = inner is not None and is_whole(heads, 1) and is_whole(head_dim, 1)
    if whole and heads * head_dim != inner:
        r.fail(
            "mamba_d_head",
            f"mamba_n_heads x mamba_d_head ({heads * head_dim}) must equal "
            f"mamba_expand x hidden_size ({inner})",
        )
    sizes = {
        "heads": heads,
        "head_dim": head_dim,
        "state": r.value("mamba2", "mamba_d_state", default=256),
        "groups": r.value("mamba2", "mamba_n_groups", default=1),
        "conv_kernel": r.value("mamba2", "mamba_d_conv", default=4),
        "conv_bias": r.bias("mamba2", "mamba_conv_bias", default=True),
        "proj_bias": r.bias("mamba2", "mamba_proj_bias", default=False),
        "chunk_size": r.value("mamba2", "mamba_chunk_size", default=256),
    }
    r.forget("mamba2")
    return {"mixer": "mamba2", "mamba2": sizes}


def _attention_keys(fields: dict[str, Any]) -> dict[str, Any]:
    """Move the attention sizes into the attention layers' block keys (a head width on a
    Mamba-2 layer would be an error)."""
    keys = ("n_heads", "n_kv_heads", "head_dim")
    return {"mixer": "attention", **{k: fields.pop(k) for k in keys if k in fields}}


def _kv_heads(r: Reader, fields: dict[str, Any], default: int | None) -> Any:
    """``num_key_value_heads``: the family's default when absent; null (or absent with no
    default) means the query heads, as the configuration classes' ``__post_init__`` sets it."""
    heads = r.nullable("n_kv_heads", "num_key_value_heads", default)
    return fields["n_heads"] if heads is None else heads


def _attention_swiglu(r: Reader) -> dict[str, Any]:
    """The sizes Bamba and Falcon-H1 share: Llama-style attention (K ``num_key_value_heads``
    (8), ``head_dim`` (D / H), biases when ``attention_bias``), a SwiGLU MLP of
    ``intermediate_size`` (14,336; biases when ``mlp_bias``), untied by default."""
    fields = standard_sizes(r)
    fields.update(
        n_kv_heads=_kv_heads(r, fields, 8),
        head_dim=r.value("head_dim", "head_dim", default=None),
        position="rotary",
        norm="rmsnorm",
        fused_qkv=False,
        ffn="swiglu",
        ffn_hidden=r.value("ffn_hidden", "intermediate_size", default=14336),
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=False),
    )
    attention_bias(r, fields)
    mlp_bias(r, fields)
    return fields


def bamba(r: Reader) -> dict[str, Any]:
    """BambaForCausalLM: ``embed_tokens`` (V x D); per layer ``input_layernorm`` and
    ``pre_ff_layernorm`` (RMSNorm, D each), a mixer and a SwiGLU ``feed_forward``
    (``gate_proj``/``up_proj`` D -> h, ``down_proj``; h ``intermediate_size`` 14,336, biases
    when ``mlp_bias``). The mixer is attention on the layers ``attn_layer_indices`` lists
    (``q_proj`` D -> H d, ``k_proj``/``v_proj`` D -> K d, ``o_proj``; K ``num_key_value_heads``
    (8), d ``head_dim`` (D / H), biases when ``attention_bias``; rotary on half of each head),
    else a Mamba-2 ``mamba`` (:func:`mamba2_mixer`): ``in_proj`` D -> 2I + 2GN + H, ``conv1d``
    (I + 2GN, 1, k), ``dt_bias``/``A_log``/``D`` (H), gated RMSNorm ``norm`` (I), ``out_proj``
    I -> D. Final ``final_layernorm``; ``lm_head`` untied by default."""
    fields = _attention_swiglu(r)
    time_step_limit(r, pair=True)
    d, h = fields.get("head_dim"), fields["n_heads"]
    if d is None and is_whole(fields["d_model"], 1) and is_whole(h, 1):
        d = fields["d_model"] // h
    fields["rotary_dim"] = d // 2 if is_whole(d, 2) else None
    blocks = {"attention": _attention_keys(fields), "mamba": mamba2_mixer(r, fields["d_model"])}
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    if not r.data.get("attn_layer_indices"):
        fields.update(blocks["mamba"])
        return fields
    layout = hf_layers.at_indices(r, n, "attn_layer_indices", "attention", "mamba")
    if layout is not None:
        hf_layers.set_layers(r, fields, n, layout, blocks)
    return fields


def granitemoehybrid(r: Reader) -> dict[str, Any]:
    """GraniteMoeHybridForCausalLM (Granite 4.0): ``embed_tokens`` (V x D); per layer
    ``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm, D each), a mixer, and
    ``shared_mlp`` (``input_linear`` D -> 2h, ``output_linear`` h -> D, SwiGLU, no biases; h
    ``shared_intermediate_size`` 1,024) plus, when ``num_local_experts`` (8) > 0,
    ``block_sparse_moe``: ``router.weight`` (X x D) and X stacked SwiGLU experts of
    ``intermediate_size`` (11,008), ``num_experts_per_tok`` (2) active. The mixer is attention
    (``q_proj`` D -> H d, ``k_proj``/``v_proj`` D -> K d, ``o_proj``; K ``num_key_value_heads``
    (null: H), d ``head_dim``, else D // H, floored as ``GraniteMoeHybridAttention`` takes it;
    biases when ``attention_bias``; rotary only when ``position_embedding_type`` is "rope",
    default none) on the layers ``layer_types`` marks ``full_attention`` (or
    ``attention``), else Mamba-2 ``mamba`` (:func:`mamba2_mixer`); default every layer Mamba-2.
    Final ``norm``; ``lm_head`` untied by default. The multipliers hold no parameters."""
    fields = standard_sizes(r)
    time_step_limit(r, pair=True)
    rope = r.value("position", "position_embedding_type", default=None) == "rope"
    fields.update(
        n_kv_heads=_kv_heads(r, fields, None),
        head_dim=r.value("head_dim", "head_dim", default=None),
        position="rotary" if rope else "none",
        norm="rmsnorm",
        fused_qkv=False,
        ffn="swiglu",
        ffn_bias=False,
        fused_gate_up=True,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=False),
    )
    attention_bias(r, fields)
    shared = r.value("ffn_hidden", "shared_intermediate_size", default=1024)
    experts = routed_experts(
        r,
        ("num_local_experts",),
        ("num_experts_per_tok",),
        (8, 2),
        (("intermediate_size",), 11008),
    )
    if experts["moe_experts"] == 0:
        fields["ffn_hidden"] = shared
    else:
        fields.update(experts, moe_shared_ffn_hidden=shared)
    floored_head_dim(r, fields)
    attention = _attention_keys(fields)
    mamba = mamba2_mixer(r, fields["d_model"])
    blocks = {**dict.fromkeys(ATTENTION_KINDS, attention), **dict.fromkeys(MAMBA_KINDS, mamba)}
    hf_layers.listed_or_rule(
        r, fields, blocks, lambda n: hf_layers.Layout([("linear_attention", n)])
    )
    return fields


def time_step_limit(r: Reader, pair: bool) -> None:
    """``time_step_limit`` sizes nothing, but the configuration classes type it and refuse
    anything else: FalconH1Config, BambaConfig and GraniteMoeHybridConfig as a pair of floats
    (``tuple[float, float]``, the list made a tuple in ``__post_init__``), Mamba2Config and
    NemotronHConfig as floats (``list[float] | tuple[float, ...]``)."""
    limit = r.data.get("time_step_limit")
    floats = isinstance(limit, list) and all(map(_a_float, limit))
    if limit is None or (floats and (len(limit) == 2 or not pair)):
        return
    kind = "a pair of floats, such as [0.0, Infinity]" if pair else "a list of floats"
    r.fail(
        "time_step_limit",
        f"expected {kind} (got {limit!r}): transformers refuses the file "
        f"({hf_layers.known_name(r)} types it so)",
    )


def _a_float(value: Any) -> bool:
    """A float, or transformers 5's tag for one that is not finite (``{"__float__":
    "Infinity"}``, as a mapping given in Python may still hold it)."""
    tag = value.get(FLOAT_TAG) if isinstance(value, dict) and len(value) == 1 else None
    return isinstance(value, float) or tag in NON_FINITE


def falcon_h1(r: Reader) -> dict[str, Any]:
    """FalconH1ForCausalLM: ``embed_tokens`` (V x D); every layer ``input_layernorm`` and
    ``pre_ff_layernorm`` (RMSNorm, D each), attention ``self_attn`` AND a Mamba-2 ``mamba`` run
    side by side on the same normed input, and a SwiGLU ``feed_forward`` (``gate_proj``/
    ``up_proj`` D -> h, ``down_proj``; h ``intermediate_size`` 14,336, biases when
    ``mlp_bias``). Attention: ``q_proj`` D -> H d, ``k_proj``/``v_proj`` D -> K d, ``o_proj``
    (K ``num_key_value_heads`` 8, d ``head_dim`` (D / H), biases when ``attention_bias``),
    rotary. Mamba-2 (:func:`mamba2_mixer`) with I = ``mamba_d_ssm`` (1,024; null: int(
    ``mamba_expand`` x D)), the gated RMSNorm only when ``mamba_rms_norm`` (false), in_proj's
    bias ``mamba_proj_bias`` and out_proj's ``projectors_bias`` (both false). Final
    ``final_layernorm``; ``lm_head`` untied by default. The multipliers (muP) hold no parameters
    (``mup_vector`` is a buffer). ``time_step_limit`` must be a pair of floats
    (:func:`time_step_limit`)."""
    fields = _attention_swiglu(r)
    time_step_limit(r, pair=True)
    inner = r.nullable("mamba2", "mamba_d_ssm", 1024)
    mixer = mamba2_mixer(r, fields["d_model"], inner)
    mixer["mamba2"]["gated_norm"] = r.flag("mamba_rms_norm", False)
    out_bias = r.flag("projectors_bias", False)
    if out_bias != mixer["mamba2"]["proj_bias"]:
        mixer["mamba2"]["out_proj_bias"] = out_bias
    fields.update(mixer, mixer="attention", parallel_mamba2=True)
    return fields


FAMILIES = {"bamba": bamba, "falcon_h1": falcon_h1, "granitemoehybrid": granitemoehybrid}


PEFT_NAMES = {
    "bamba": llama_names({**FEED_FORWARD, "mixer": "mamba"}),
    "falcon_h1": llama_names({**FEED_FORWARD, "mixer": "mamba"}, refused=MAMBA_REFUSED),
    "granitemoehybrid": llama_names(
        {"mlp": "block_sparse_moe", "mixer": "mamba"},
        {
            **GRANITE_SHARED_MLP,
            "mlp.gate_up_proj": "shared_mlp.input_linear",
            "mlp.down_proj": "shared_mlp.output_linear",
        },
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
