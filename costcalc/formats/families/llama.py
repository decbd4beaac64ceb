"""Hugging Face families built like Llama: RMSNorm twice per block and a final RMSNorm, rotary
positions, q/k/v/o projections, a gated FFN (``gate``, ``up``, ``down``), no position table:
llama, mistral, qwen2, qwen3, gemma, phi3 and mixtral.

Each function reads the keys its ``transformers`` configuration class defines, with that class's
defaults, and its docstring names what the family's modeling code builds beyond the shared
layout of :func:`llama_layout` (transformers 5.24, ``models/<family>/modeling_<family>.py``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.hf_reader import (
    STANDARD_KEYS,
    Reader,
    attention_bias,
    is_whole,
    mlp_bias,
    rotary_dim,
    standard_sizes,
)
from costcalc.formats.peft_names import LLAMA, MIXTRAL_CONVERTED, ROUTER_GATE, llama_names


def llama_layout(
    r: Reader,
    *,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    tie: bool = False,
    qkv_bias: bool = False,
    act: str = "silu",
    act_key: str = "hidden_act",
    sizes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The shared layout: ``embed_tokens`` (V x D); per block ``input_layernorm`` and
    ``post_attention_layernorm`` (RMSNorm, D each), ``q_proj`` (D x H d), ``k_proj``/``v_proj``
    (D x K d), ``o_proj`` (H d x D), ``gate_proj``/``up_proj`` (D x h each), ``down_proj``
    (h x D); final ``norm``; ``lm_head`` (V x D, no bias). d is ``head_dim`` (default D / H;
    null: D / H whatever the class's default, as SeedOssConfig's ``__post_init__`` and the
    attention's ``getattr(config, "head_dim", None) or D // H`` read it), K
    ``num_key_value_heads`` (null: the heads, as ``__post_init__`` sets them); the defaults
    given here are the family's own (a gated FFN is GeGLU when ``hidden_act`` (or the family's
    ``act_key``) is a GELU, else SwiGLU). ``sizes``: the family's defaults for the standard
    sizes, for a family whose files leave them out (a multimodal ``text_config``); without it
    they are the class defaults where the file leaves them out."""
    if sizes is None:
        fields = standard_sizes(r)
        fields["ffn_hidden"] = r.size("ffn_hidden", "intermediate_size")
    else:
        keys = {**STANDARD_KEYS, "ffn_hidden": ("intermediate_size",)}
        fields = {f: r.value(f, *names, default=sizes[f]) for f, names in keys.items()}
    act = r.value("ffn", act_key, default=act)
    fields.update(
        n_kv_heads=r.nullable("n_kv_heads", "num_key_value_heads", kv_heads),
        head_dim=r.nullable("head_dim", "head_dim", head_dim),
        position="rotary",
        ffn="geglu" if isinstance(act, str) and act.startswith("gelu") else "swiglu",
        norm="rmsnorm",
        qkv_bias=qkv_bias,
        attn_out_bias=qkv_bias,
        ffn_bias=False,
        fused_qkv=False,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=tie),
    )
    floored_head_dim(r, fields)
    return fields


def heads_span_width(r: Reader, fields: dict[str, Any], built: str) -> None:
    """Refuse a ``head_dim`` whose heads do not span the width (H d other than D) in a family
    that sizes a module from D where it takes H d (``built`` says which): transformers builds
    it, but its forward cannot run."""
    d, h, head_dim = fields.get("d_model"), fields.get("n_heads"), fields.get("head_dim")
    if is_whole(d, 1) and is_whole(h, 1) and is_whole(head_dim, 1) and h * head_dim != d:
        r.unsupported(
            "head_dim",
            f"{h:,} heads of {head_dim:,} span {h * head_dim:,}, not hidden_size {d:,}: "
            f"{built}, so the model transformers builds cannot run",
        )


def floored_head_dim(r: Reader, fields: dict[str, Any], width: Any = None) -> None:
    """``head_dim`` D // H, with a note, when the heads H do not divide the width D and the
    family's configuration class takes such a width: its attention takes ``getattr(config,
    "head_dim", None) or hidden_size // num_attention_heads``, a floor (q_proj D -> H (D // H)).
    ``width``: D, for the ``fields`` of a layer group (which hold none)."""
    d, h, known = fields.get("d_model", width), fields.get("n_heads"), r.config_class
    if fields.get("head_dim") is not None or known is None or known.heads_divide_width:
        return
    if is_whole(d, 1) and is_whole(h, 1) and d % h and d >= h:
        fields["head_dim"] = d // h
        r.key_names["head_dim"] = r.name("num_attention_heads")
        r.note(
            f"hidden_size {d:,} does not split into {h:,} equal heads; {known.name} takes it and "
            f"its attention floors head_dim to {d // h:,} (the heads span {h * (d // h):,})."
        )


def sliding_window(r: Reader, default: int | None) -> Any:
    """``sliding_window``: the family's default when the key is absent, none when it is null."""
    return r.nullable("sliding_window", "sliding_window", default)


def llama(r: Reader, **defaults: Any) -> dict[str, Any]:
    """LlamaForCausalLM (Llama 1-3, SmolLM): the shared layout; q/k/v/o carry a bias when
    ``attention_bias``, gate/up/down when ``mlp_bias`` (both default false); untied by default.
    ``defaults``: another configuration class's defaults for :func:`llama_layout`."""
    fields = llama_layout(r, **defaults)
    attention_bias(r, fields)
    mlp_bias(r, fields)
    return fields


def mistral(r: Reader) -> dict[str, Any]:
    """MistralForCausalLM: the shared layout, no biases, untied by default, 8 key/value heads
    when ``num_key_value_heads`` is absent; every layer attends within ``sliding_window``
    (default 4,096; null for none)."""
    fields = llama_layout(r, kv_heads=8)
    fields["sliding_window"] = sliding_window(r, default=4096)
    return fields


def qwen2(
    r: Reader,
    *,
    kv_heads: int = 32,
    windows: tuple[int, int] = (4096, 28),
    sizes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Qwen2ForCausalLM (Qwen2, Qwen2.5): the shared layout with a bias on q/k/v (not on
    ``o_proj``, not in the MLP); untied by default, 32 key/value heads when
    ``num_key_value_heads`` is absent. ``sliding_window`` applies only with
    ``use_sliding_window`` (``windows``: the defaults of ``sliding_window`` and
    ``max_window_layers``, 4,096 and 28), and then only to layers from ``max_window_layers`` on (or
    those ``layer_types`` marks). The keyword arguments are the defaults of a configuration class
    built alike (Qwen2-VL's, Qwen2.5-Omni's text config)."""
    fields = llama_layout(r, kv_heads=kv_heads, qkv_bias=True, sizes=sizes)
    fields["attn_out_bias"] = False
    _qwen_windows(r, fields, windows)
    return fields


def gemma(r: Reader) -> dict[str, Any]:
    """GemmaForCausalLM: the shared layout with GeGLU, ``head_dim`` 256 unless given (H d may
    differ from D), 16 key/value heads when ``num_key_value_heads`` is absent, RMSNorm weights
    stored as offsets (still D each), q/k/v/o bias when ``attention_bias``; tied by default."""
    fields = llama_layout(r, kv_heads=16, head_dim=256, tie=True, act="gelu_pytorch_tanh")
    attention_bias(r, fields)
    return fields


def phi3(
    r: Reader, *, kv_heads: int | None = None, sizes: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Phi3ForCausalLM: the shared layout with q/k/v fused into ``qkv_proj`` (D x (H + 2K) d)
    and gate/up fused into ``gate_up_proj`` (D x 2h), no biases, untied by default; rotary on
    ``partial_rotary_factor`` (default 1) of each head; ``sliding_window`` when given. The
    keyword arguments are the defaults of a configuration class built alike (Phi-4-multimodal's)."""
    fields = llama_layout(r, kv_heads=kv_heads, sizes=sizes)
    fields.update(fused_qkv=True, fused_gate_up=True)
    fields["rotary_dim"] = rotary_dim(r, fields, ("partial_rotary_factor",), 1.0)
    fields["sliding_window"] = sliding_window(r, default=None)
    return fields


def mixtral(r: Reader) -> dict[str, Any]:
    """MixtralForCausalLM: the shared layout with the MLP replaced by a sparse mixture of
    experts: ``mlp.gate`` (router, X x D, no bias) and ``mlp.experts`` holding X SwiGLU experts
    (``gate_up_proj`` X x 2h x D, ``down_proj`` X x D x h), X = ``num_local_experts``, each token
    routed to ``num_experts_per_tok``; no biases, untied by default, 8 key/value heads when
    ``num_key_value_heads`` is absent, ``sliding_window`` when given."""
    fields = llama_layout(r, kv_heads=8)
    fields["moe_experts"] = r.value("moe_experts", "num_local_experts", "num_experts", default=8)
    fields["moe_top_k"] = r.value("moe_top_k", "num_experts_per_tok", default=2)
    fields["sliding_window"] = sliding_window(r, default=None)
    return fields


def _qwen_windows(
    r: Reader, fields: dict[str, Any], defaults: tuple[int, int] = (4096, 28)
) -> None:
    """Qwen2/Qwen3 windows: none unless ``use_sliding_window``; then the layers ``layer_types``
    marks ``sliding_attention``, or (without it) those from ``max_window_layers`` on (defaults:
    ``sliding_window``, ``max_window_layers``)."""
    window = r.value("sliding_window", "sliding_window", default=defaults[0])
    if not r.flag("use_sliding_window", False):
        window = None

    def rule(n: int) -> hf_layers.Layout:
        kinds = ("full_attention", "sliding_attention")
        split = hf_layers.split_at(r, n, "max_window_layers", defaults[1], *kinds)
        return hf_layers.Layout(split)

    hf_layers.attention_layers(r, fields, window, rule)


def qwen3_layout(
    r: Reader,
    *,
    kv_heads: int | None = None,
    head_dim: int | None = 128,
    sizes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Qwen3's attention on the shared layout: ``head_dim`` 128 unless given, an RMSNorm of
    head_dim on queries and on keys (``q_norm``, ``k_norm``), q/k/v/o bias when
    ``attention_bias``; untied by default. The keyword arguments are the defaults of the
    configuration class (Qwen3-MoE's, Qwen3-VL's text config)."""
    fields = llama_layout(r, kv_heads=kv_heads, head_dim=head_dim, sizes=sizes)
    attention_bias(r, fields)
    fields["qk_norm"] = "head"
    return fields


def qwen3(r: Reader) -> dict[str, Any]:
    """Qwen3ForCausalLM: :func:`qwen3_layout`; windows as Qwen2."""
    fields = qwen3_layout(r)
    _qwen_windows(r, fields)
    return fields


FAMILIES = {
    "gemma": gemma,
    "llama": llama,
    "mistral": mistral,
    "mixtral": mixtral,
    "phi3": phi3,
    "qwen2": qwen2,
    "qwen3": qwen3,
}


PEFT_NAMES = {
    **dict.fromkeys(("gemma", "llama", "mistral", "phi3", "qwen2", "qwen3"), LLAMA),
    "mixtral": llama_names(renames=ROUTER_GATE, converted=MIXTRAL_CONVERTED),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
