"""Hugging Face hybrids of attention and a linear-time mixer: lfm2 (short convolutions),
qwen3_next, qwen3_5_text, qwen3_5_moe_text, lara_mini and olmo_hybrid (Gated DeltaNet),
kimi_linear (Kimi Delta Attention).

Each function reads the keys its ``transformers`` configuration class defines, with that class's
defaults, and its docstring names the tensors the family's modeling code builds (transformers
5.24, ``models/<family>/modeling_<family>.py``). The mixers' own tensors are listed in
:mod:`costcalc.tensors` (``short_conv_tensors``, ``gated_deltanet_tensors``).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import floored_head_dim
from costcalc.formats.families.moe import routed_experts, sparse_layout
from costcalc.formats.families.ssm import NO_POSITION_LIMIT
from costcalc.formats.hf_reader import (
    STANDARD_KEYS,
    Reader,
    attention_bias,
    is_whole,
    rotary_dim,
    standard_sizes,
)
from costcalc.formats.peft_names import (
    FEED_FORWARD,
    LFM2_RENAMES,
    LLAMA,
    QWEN2_MOE,
    ROUTER_GATE,
    SHARED_EXPERTS,
    llama_names,
)
from costcalc.scalars import MAX_SIZE

ATTENTION_KEYS = (
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "qk_norm",
    "attention_gate",
    "attention_head_gate",
)
"""Keys that describe attention blocks only: a hybrid sets them on its attention layers."""


def _blocks(
    fields: dict[str, Any],
    linear: dict[str, Any],
    window: Any = None,
    indexer: dict[str, Any] | None = None,
) -> dict[str, hf_layers.Block]:
    """Move the attention keys into the attention layers (sliding ones within ``window``) and
    give the others ``linear``; with ``indexer`` every full attention layer holds it (also
    named ``indexed_attention``)."""
    attention = {"mixer": "attention", **{k: fields.pop(k) for k in ATTENTION_KEYS if k in fields}}
    blocks: dict[str, hf_layers.Block] = {
        "full_attention": attention,
        "sliding_attention": {**attention, "sliding_window": window},
        "linear_attention": linear,
        "conv": linear,
    }
    if indexer is not None:
        blocks["full_attention"] = blocks["indexed_attention"] = {**attention, **indexer}
    return blocks


def _hybrid(
    r: Reader,
    fields: dict[str, Any],
    linear: dict[str, Any],
    rule: hf_layers.Rule,
    window: Any = None,
    indexer: dict[str, Any] | None = None,
    ffn: tuple[list[tuple[str, int]], dict[str, hf_layers.Block]] | None = None,
) -> dict[str, Any]:
    """The layers of :func:`_blocks` as ``layer_types`` lists them, else by the family's
    ``rule``; with ``ffn`` (runs of FFN kinds and their blocks) each layer's FFN as those runs
    say."""
    hf_layers.listed_or_rule(r, fields, _blocks(fields, linear, window, indexer), rule, ffn)
    return fields


def lfm2(r: Reader) -> dict[str, Any]:
    """Lfm2ForCausalLM: ``embed_tokens`` (V x D); per layer ``operator_norm`` and ``ffn_norm``
    (RMSNorm, D each), a mixer and a SwiGLU ``feed_forward`` (``w1``, ``w3`` D -> h, ``w2``
    h -> D, no biases). The mixer is attention (``q_proj`` D -> H d, ``k_proj``/``v_proj`` D ->
    K d, ``out_proj``, RMSNorms ``q_layernorm``/``k_layernorm`` of d, no biases, rotary; K
    ``num_key_value_heads`` (8)) on the layers ``layer_types`` marks ``full_attention`` (or
    ``full_attn_idxs`` lists; default every layer), else a short convolution ``conv``:
    ``in_proj`` D -> 3D, ``conv`` (D, 1, ``conv_L_cache`` (3)), ``out_proj`` D -> D, biases when
    ``conv_bias`` (false). h = ``block_ff_dim`` or ``intermediate_size`` (12,288); with
    ``block_auto_adjust_ff_dim`` (true) h = int(2 h / 3), then int(``block_ffn_dim_multiplier``
    (1.0) x h) rounded up to a multiple of ``block_multiple_of`` (256). The final norm is named
    ``embedding_norm`` (D); tied by default. Lfm2Config refuses a ``full_attn_idxs`` that is
    not a list of layer indices (typed ``list[int] | None``) even beside ``layer_types``, and a
    null ``block_ff_dim``, which its ``__post_init__`` sets ``intermediate_size`` to."""
    fields, conv = lfm2_parts(r, _lfm2_ffn_width)
    listed = r.data.get("full_attn_idxs")
    if listed is not None and not (isinstance(listed, list) and all(is_whole(i) for i in listed)):
        r.fail(
            "full_attn_idxs",
            f"expected a list of layer indices (got {listed!r}): transformers refuses the file "
            "(Lfm2Config types it as a list of ints, whatever layer_types says)",
        )
    return _hybrid(r, fields, conv, lambda n: _lfm2_rule(r, n))


def lfm2_parts(
    r: Reader, ffn_width: Callable[[Reader], Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What LFM2 and LFM2-MoE share: the model's fields with the attention layers' keys (K
    ``num_key_value_heads`` (8), d ``head_dim`` when given (else D / H), per-head q/k norms, no
    biases, rotary), a SwiGLU FFN of ``ffn_width``, tied by default (``tie_embedding``, when given,
    over ``tie_word_embeddings``, as ``__post_init__`` reads them); and the short-convolution block
    (kernel ``conv_L_cache`` (3), biases when ``conv_bias``)."""
    fields = standard_sizes(r)
    fields.update(
        n_kv_heads=r.value("n_kv_heads", "num_key_value_heads", default=8),
        head_dim=r.value("head_dim", "head_dim", default=None),
        position="rotary",
        norm="rmsnorm",
        qk_norm="head",
        qkv_bias=False,
        attn_out_bias=False,
        fused_qkv=False,
        ffn="swiglu",
        ffn_bias=False,
        ffn_hidden=ffn_width(r),
        tie_embeddings=r.value(
            "tie_embeddings", "tie_embedding", "tie_word_embeddings", default=True
        ),
    )
    floored_head_dim(r, fields)
    conv = {
        "mixer": "short_conv",
        "short_conv": {
            "conv_kernel": r.value("short_conv", "conv_L_cache", default=3),
            "bias": r.value("short_conv", "conv_bias", default=False),
        },
    }
    r.forget("short_conv")
    return fields, conv


def _lfm2_rule(r: Reader, n: int) -> hf_layers.Layout | None:
    """Without ``layer_types``: attention on the layers ``full_attn_idxs`` lists (default: every
    layer), short convolutions on the others."""
    if r.data.get("full_attn_idxs") is None:
        return hf_layers.Layout([("full_attention", n)])
    return hf_layers.at_indices(r, n, "full_attn_idxs", "full_attention", "conv")


LFM3_CYCLE = [("conv", 1), ("full_attention", 1), ("conv", 1), ("sliding_attention", 1)]
"""Lfm3Config's default layers from layer 1 on: full attention where i % 4 == 2, sliding where
i % 4 == 0; layer 0 is a short convolution."""


def lfm3(r: Reader) -> dict[str, Any]:
    """Lfm3ForCausalLM: as lfm2 (``operator_norm``, ``ffn_norm``, the short convolution ``conv``
    with k ``conv_L_cache`` (7), biases ``conv_bias`` (false), the SwiGLU ``feed_forward`` of
    ``intermediate_size`` (7,680, used as given), final ``embedding_norm``, tied by default),
    with sandwich norms ``post_operator_norm`` and ``post_ffn_norm`` when ``use_sandwich_norm``
    (true), attention (``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``, biases when
    ``attention_bias``; ``q_norm``/``k_norm`` of d ``head_dim`` (128); K ``num_key_value_heads``
    (4)) gated per head by ``g_proj`` D -> H when ``use_attention_gate`` (true), and two kinds
    of attention layer: full, and sliding within ``sliding_window`` (256). Layers as
    ``layer_types`` lists them; by default layer 0 is a convolution, then full attention where
    i % 4 == 2, sliding where i % 4 == 0, convolutions elsewhere."""
    fields = standard_sizes(r)
    fields.update(
        n_kv_heads=r.value("n_kv_heads", "num_key_value_heads", default=4),
        head_dim=r.value("head_dim", "head_dim", default=128),
        position="rotary",
        norm="rmsnorm",
        norms_per_block=4 if r.flag("use_sandwich_norm", True) else 2,
        qk_norm="head",
        attention_head_gate=r.flag("use_attention_gate", True),
        fused_qkv=False,
        ffn="swiglu",
        ffn_bias=False,
        ffn_hidden=r.value("ffn_hidden", "intermediate_size", default=7680),
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    attention_bias(r, fields)
    conv = {
        "mixer": "short_conv",
        "short_conv": {
            "conv_kernel": r.value("short_conv", "conv_L_cache", default=7),
            "bias": r.value("short_conv", "conv_bias", default=False),
        },
    }
    r.forget("short_conv")
    blocks = _blocks(fields, conv, r.nullable("sliding_window", "sliding_window", 256))
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    listed = hf_layers.layer_types(r, n)
    if listed is not None:
        hf_layers.apply(r, fields, hf_layers.runs(listed), blocks)
    elif n > len(LFM3_CYCLE):
        fields["layers"] = [
            *hf_layers.groups([("conv", 1)], blocks),
            *hf_layers.cycle(n - 1, LFM3_CYCLE, blocks),
        ]
    else:
        hf_layers.apply(r, fields, [("conv", 1), *LFM3_CYCLE[: n - 1]], blocks)
    return fields


def _lfm2_ffn_width(r: Reader) -> Any:
    if "block_ff_dim" in r.data and r.data["block_ff_dim"] is None:
        r.fail(
            "block_ff_dim",
            "null: transformers refuses the file (Lfm2Config's __post_init__ sets "
            "intermediate_size to it, and intermediate_size takes no null; leave the key out)",
        )
    width = r.value("ffn_hidden", "block_ff_dim", "intermediate_size", default=12288)
    if not is_whole(width, 1) or width > MAX_SIZE or not r.flag("block_auto_adjust_ff_dim", True):
        return width  # a width out of bounds is refused as ffn_hidden
    width = 2 * width // 3
    if r.data.get("block_ffn_dim_multiplier", 1.0) is not None:
        multiplier = r.number((), "block_ffn_dim_multiplier", default=1.0)
        if multiplier is None:
            return None
        multiple = r.data.get("block_multiple_of", 256)
        if not isinstance(multiple, int) or isinstance(multiple, bool) or multiple < 1:
            r.fail("block_multiple_of", f"expected a whole number, 1 or more (got {multiple!r})")
            return None
        width = int(multiplier * width)
        width = multiple * ((width + multiple - 1) // multiple)
    return width


def _qwen_linear_attention(
    r: Reader,
    *,
    split: bool,
    sparse: bool,
    kv_heads: int = 2,
    experts: tuple[int, int] = (512, 10),
    head_dim: int = 256,
    gates: bool = True,
    tie: bool = False,
    linear_heads: tuple[int, int] = (16, 32),
    rule: hf_layers.Rule | None = None,
    window: Any = None,
    indexer: dict[str, Any] | None = None,
    sizes: dict[str, Any] | None = None,
    rotary: float | None = 0.25,
    dense_layers: bool = False,
) -> dict[str, Any]:
    """Shared by Qwen3-Next, Qwen3.5, Qwen4-Exp and Lara Mini: gated attention (``gates``: the
    queries' output gate and the shared expert's gate; with the keys of ``indexer``) every
    ``full_attention_interval``-th layer (or as ``layer_types`` or the family's ``rule`` says;
    sliding layers within ``window``), Gated DeltaNet elsewhere; with ``dense_layers`` some
    FFNs dense (:func:`_dense_among_sparse`). The standard sizes have the family's defaults
    ``sizes``, or are required. ``partial_rotary_factor`` defaults to ``rotary`` (Qwen3-Next's
    and Qwen3.5's classes set 0.25; Qwen4-Exp's rotary embedding takes 1.0); ``None``: the
    family's rotary embedding reads no factor and rotates the whole head
    (:func:`_whole_head_rotated`)."""
    if sizes is None:
        fields = standard_sizes(r)
    else:
        fields = {f: r.value(f, *keys, default=sizes[f]) for f, keys in STANDARD_KEYS.items()}
    fields.update(
        n_kv_heads=r.value("n_kv_heads", "num_key_value_heads", default=kv_heads),
        head_dim=r.value("head_dim", "head_dim", default=head_dim),
        position="rotary",
        norm="rmsnorm",
        qk_norm="head",
        attention_gate=gates,
        fused_qkv=False,
        ffn="swiglu",
        ffn_bias=False,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=tie),
    )
    attention_bias(r, fields)
    if rotary is None:
        _whole_head_rotated(r)
    else:
        fields["rotary_dim"] = rotary_dim(r, fields, ("partial_rotary_factor",), rotary)
    ffn = None
    if sparse:
        hidden = (("moe_intermediate_size",), 512)
        moe = routed_experts(r, ("num_experts",), ("num_experts_per_tok",), experts, hidden)
        moe.update(
            moe_shared_ffn_hidden=r.value(
                "moe_shared_ffn_hidden", "shared_expert_intermediate_size", default=512
            ),
            moe_shared_gate=gates,
        )
        ffn = _dense_among_sparse(r, fields, moe) if dense_layers else None
        if ffn is None:
            fields.update(moe)
    else:
        fields["ffn_hidden"] = r.value("ffn_hidden", "intermediate_size", default=12288)
    net = {
        "mixer": "gated_deltanet",
        "gated_deltanet": {
            "key_heads": r.value("gated_deltanet", "linear_num_key_heads", default=linear_heads[0]),
            "value_heads": r.value(
                "gated_deltanet", "linear_num_value_heads", default=linear_heads[1]
            ),
            "key_head_dim": r.value("gated_deltanet", "linear_key_head_dim", default=128),
            "value_head_dim": r.value("gated_deltanet", "linear_value_head_dim", default=128),
            "conv_kernel": r.value("gated_deltanet", "linear_conv_kernel_dim", default=4),
            "split_projections": split,
        },
    }
    r.forget("gated_deltanet")
    return _hybrid(r, fields, net, rule or (lambda n: _interval_rule(r)), window, indexer, ffn)


def _dense_among_sparse(
    r: Reader, fields: dict[str, Any], moe: dict[str, Any]
) -> tuple[list[tuple[str, int]], dict[str, hf_layers.Block]] | None:
    """Qwen3NextDecoderLayer's FFN: the sparse block ``moe`` on layer i unless i is in
    ``mlp_only_layers`` or (i + 1) is no multiple of ``decoder_sparse_step`` (1), or
    ``num_experts`` is 0 (:func:`costcalc.formats.families.moe.sparse_layout`); a dense SwiGLU
    ``mlp`` of ``intermediate_size`` (5,632) elsewhere. The runs of FFN kinds and their blocks,
    or None when every layer is sparse (or the layer count is unusable)."""
    n = hf_layers.count_of(fields["n_layers"])
    step = r.count("decoder_sparse_step", 1)
    layout = None if n is None else sparse_layout(r, n, step, r.data.get("mlp_only_layers"))
    if n is None or layout is None:
        return None
    kinds = [("dense", n)] if moe.get("moe_experts") == 0 else hf_layers.unrolled(r, layout, n)
    if kinds is None or all(kind == "moe" for kind, count in kinds if count):
        return None
    fields["ffn_hidden"] = r.value("ffn_hidden", "intermediate_size", default=5632)
    return kinds, {"dense": {}, "moe": moe}


def _whole_head_rotated(r: Reader) -> None:
    """A family whose rotary embedding takes d = ``head_dim`` whatever the file says (Lara
    Mini's ``compute_default_rope_parameters``, modeling_lara_mini.py, line 124): a
    ``partial_rotary_factor`` given is read by nothing, which a note says."""
    rope = r.data.get("rope_parameters")
    nested = isinstance(rope, dict) and rope.get("partial_rotary_factor") is not None
    key = "rope_parameters.partial_rotary_factor" if nested else "partial_rotary_factor"
    if nested or r.data.get("partial_rotary_factor") is not None:
        r.note(
            f"{r.name(key)} is not read: this family's rotary embedding rotates the whole "
            "head (as transformers builds it); counted so."
        )


def _interval_rule(r: Reader) -> hf_layers.Layout:
    """Without ``layer_types``: layer i is full attention when (i + 1) % interval == 0, a cycle
    of interval - 1 Gated DeltaNet layers and one attention layer."""
    interval = r.count("full_attention_interval", 4)
    return hf_layers.every_nth(interval, "full_attention", "linear_attention")


def qwen3_next(r: Reader) -> dict[str, Any]:
    """Qwen3NextForCausalLM: ``embed_tokens`` (V x D); per layer ``input_layernorm`` and
    ``post_attention_layernorm`` (RMSNorm, D each), a mixer and a sparse MoE ``mlp``. Every
    ``full_attention_interval``-th (4) layer is gated attention: ``q_proj`` D -> 2 H d (queries
    and an output gate), ``k_proj``/``v_proj`` D -> K d, ``o_proj``, ``q_norm``/``k_norm`` of
    d (d ``head_dim`` 256, K ``num_key_value_heads`` 2, bias ``attention_bias``), rotary on
    ``partial_rotary_factor`` (0.25); the others Gated DeltaNet ``linear_attn``:
    ``in_proj_qkvz`` D -> 2 Hk dk + 2 Hv dv, ``in_proj_ba`` D -> 2 Hv, ``conv1d``
    (2 Hk dk + Hv dv, 1, ``linear_conv_kernel_dim`` 4), ``dt_bias``/``A_log`` (Hv), gated
    RMSNorm (dv), ``out_proj`` (Hk ``linear_num_key_heads`` 16, Hv ``linear_num_value_heads``
    32, dk/dv ``linear_key_head_dim``/``linear_value_head_dim`` 128). The MoE: router
    ``mlp.gate`` (X x D), X = ``num_experts`` (512) SwiGLU experts of ``moe_intermediate_size``
    (512), ``num_experts_per_tok`` (10) active, a shared SwiGLU expert
    (``shared_expert_intermediate_size`` 512) with a sigmoid ``shared_expert_gate`` (D -> 1);
    final ``norm``; untied by default. Dense layers among them: :func:`_dense_among_sparse`."""
    return _qwen_linear_attention(r, split=False, sparse=True, dense_layers=True)


def qwen3_5_text(r: Reader) -> dict[str, Any]:
    """Qwen3_5ForCausalLM (text): as qwen3_next, but the Gated DeltaNet input projections are
    four tensors (``in_proj_qkv`` D -> 2 Hk dk + Hv dv, ``in_proj_z`` D -> Hv dv, ``in_proj_b``,
    ``in_proj_a`` D -> Hv each) and every layer has a dense SwiGLU ``mlp``
    (``intermediate_size``, 12,288); K ``num_key_value_heads`` 4 by default."""
    return _qwen_linear_attention(r, split=True, sparse=False, kv_heads=4)


def qwen3_5_moe_text(r: Reader) -> dict[str, Any]:
    """Qwen3_5MoeForConditionalGeneration's text decoder: as qwen3_next with the four split
    Gated DeltaNet input projections of qwen3_5_text, a MoE in every layer (``num_experts``
    256, ``num_experts_per_tok`` 8)."""
    return _qwen_linear_attention(r, split=True, sparse=True, experts=(256, 8))


QWEN4_EXP_SIZES = {
    "vocab_size": 248320,
    "d_model": 2048,
    "n_layers": 40,
    "n_heads": 16,
    "context_length": 32768,
}
"""``Qwen4ExpTextConfig``'s defaults for the standard sizes."""


QSA_KEYS = (
    "indexer_n_heads",
    "indexer_kv_heads",
    "indexer_head_dim",
    "indexer_budget",
    "indexer_compress_ratio",
)
"""Qwen4-Exp's QSA indexer keys: none given, or all."""


def _qwen4_exp_rules(r: Reader) -> None:
    """Qwen4ExpTextConfig's rules (see :func:`qwen4_exp_text`)."""
    gate = r.setting("output_gate_type") or r.setting("hidden_act")
    if isinstance(gate, str) and gate not in ("sigmoid", "silu"):
        r.refused_by_class(
            "output_gate_type", f"an output gate of {gate!r}: Qwen4-Exp takes sigmoid or silu"
        )
    qsa = {key: r.setting(key) for key in QSA_KEYS}
    missing = [key for key, value in qsa.items() if value is None]
    if missing and len(missing) < len(QSA_KEYS):
        r.refused_by_class(missing[0], f"missing: the QSA indexer needs {', '.join(missing)} too")
        return
    budget, ratio, width = (
        qsa[k] for k in ("indexer_budget", "indexer_compress_ratio", "indexer_head_dim")
    )
    if is_whole(budget) and is_whole(ratio, 1) and budget % ratio:
        r.refused_by_class(
            "indexer_budget", f"{budget:,} is not a multiple of indexer_compress_ratio {ratio:,}"
        )
    rope = r.data.get("rope_parameters")
    factor = rope.get("partial_rotary_factor") if isinstance(rope, dict) else None
    factor = r.data.get("partial_rotary_factor", 1.0) if factor is None else factor
    head = r.setting("head_dim")  # the class has no rotary default: the whole head rotates
    if isinstance(factor, int | float) and 0 <= factor <= 1 and is_whole(head) and is_whole(width):
        rotary = int(head * factor)
        if rotary > width:
            r.refused_by_class(
                "indexer_head_dim",
                f"{width:,}, narrower than the {rotary:,} rotary dimensions of a head: the "
                "attention's rotary part must fit the QSA index head",
            )


def qwen4_exp_text(r: Reader) -> dict[str, Any]:
    """Qwen4-Exp's text decoder (``Qwen4ExpForCausalLM``; ``qwen4_exp`` holds it under
    ``text_config``): qwen3_5_moe_text's mixers and MoE (512 experts, top 10) with no norm of
    their own in the blocks and no final ``norm``: every block's ``attn_hyper_connection`` and
    ``mlp_hyper_connection`` (``Qwen4ExpTextGatedResidual`` over n = ``hc_count`` (4) streams
    of D: ``hc_norm`` (RMSNorm of n D in groups of D), ``input_mix_weight_down`` n D -> r,
    ``input_mix_weight_up`` r -> n D, ``block_inject_weight`` n D -> n; r = ``hc_lowrank``
    (320)) feed the mixer and the MoE, and ``hyper_connection_mixer`` (the same without
    ``block_inject_weight``) collapses the streams before ``lm_head``. Every attention layer
    (``indexed_attention``, or ``full_attention`` as older files list it; by default every
    ``full_attention_interval``-th, 4) holds the QSA ``indexer``: ``index_qk_proj`` D ->
    (Hi + 1) di, ``q_layernorm`` and ``k_layernorm`` (di), Hi = ``indexer_n_heads``, di =
    ``indexer_head_dim``, scoring mean-pooled blocks of ``indexer_compress_ratio`` keys; its raw
    keys (di) are cached. Sizes default to ``Qwen4ExpTextConfig``'s (vocabulary 248,320, width
    2,048, 40 layers, 16 heads, 32,768 positions). The indexer sizes have no defaults (the
    attention always builds it);
    ``indexer_kv_heads`` must be 1; ``indexer_budget`` selects tokens and holds no parameter.
    Rotary on ``partial_rotary_factor``, by default 1.0 (the whole head: Qwen4ExpTextConfig sets
    no default, and its rotary embedding reads ``rope_parameters.get("partial_rotary_factor",
    1.0)``, modeling_qwen4_exp.py, line 126).
    Per-layer n-gram embeddings (a non-empty ``ple_layer_ids``) are not supported. Refused as
    Qwen4ExpTextConfig's ``validate_architecture`` refuses them (configuration_qwen4_exp.py,
    lines 191-229): an output gate other than sigmoid or silu, QSA keys given in part, a budget
    its compression ratio does not divide, a rotary width beyond the indexer head."""
    _qwen4_exp_rules(r)
    if r.data.get("ple_layer_ids"):
        r.unsupported("ple_layer_ids", "Qwen4-Exp's per-layer n-gram embeddings (PLE)")
    if r.data.get("indexer_kv_heads", 1) != 1:
        r.fail("indexer_kv_heads", "expected 1 (Qwen4-Exp's indexer has one key head)")
    indexer = {
        "indexer_heads": r.size("indexer_heads", "indexer_n_heads"),
        "indexer_head_dim": r.size("indexer_head_dim", "indexer_head_dim"),
        "indexer_block": r.size("indexer_block", "indexer_compress_ratio"),
    }
    fields = _qwen_linear_attention(
        r,
        split=True,
        sparse=True,
        experts=(512, 10),
        indexer=indexer,
        sizes=QWEN4_EXP_SIZES,
        rotary=1.0,
    )
    fields.update(
        norms_per_block=0,
        final_norm=False,
        residual_streams=r.value("residual_streams", "hc_count", default=4),
        stream_rank=r.value("stream_rank", "hc_lowrank", default=320),
    )
    return fields


LARA_MINI_PATTERN = hf_layers.Layout(
    [
        ("linear_attention", 1),
        ("sliding_attention", 1),
        ("linear_attention", 1),
        ("full_attention", 1),
        ("sliding_attention", 1),
    ],
    cycles=True,
)
"""``LaraMiniConfig``'s default layers: this pattern of five, repeated."""


def lara_mini(r: Reader) -> dict[str, Any]:
    """LaraMiniForCausalLM (Lara 4 Mini): qwen3_5_moe_text's layout with plain attention (no
    output gate: ``q_proj`` D -> H d; ``q_norm``/``k_norm`` of d; K 4, d 128 by default) on the
    layers ``layer_types`` marks ``full_attention`` or ``sliding_attention`` (within
    ``sliding_window``, 512; null: none), by default the cycle linear, sliding, linear, full,
    sliding; Gated DeltaNet elsewhere (Hk 8, Hv 16 by default; split input projections; its
    gated norm ``norm``, dv). In every layer the MoE of X = ``num_experts`` (128) experts of
    ``moe_intermediate_size`` (512), ``num_experts_per_tok`` (4) active, and a shared SwiGLU
    expert (``shared_expert_intermediate_size``, 512) added without a gate; tied by default.
    Its rotary embedding rotates the whole head (it reads no ``partial_rotary_factor``)."""
    window = r.nullable("sliding_window", "sliding_window", 512)
    return _qwen_linear_attention(
        r,
        split=True,
        sparse=True,
        kv_heads=4,
        experts=(128, 4),
        head_dim=128,
        gates=False,
        tie=True,
        linear_heads=(8, 16),
        rule=lambda n: LARA_MINI_PATTERN,
        window=window,
        rotary=None,
    )


def olmo_hybrid(r: Reader) -> dict[str, Any]:
    """OlmoHybridForCausalLM: ``embed_tokens`` (V x D); per layer two RMSNorms (D each) and an
    SwiGLU ``mlp`` (``gate_proj``/``up_proj`` D -> h, ``down_proj``; h ``intermediate_size``
    11,008, no biases). Attention layers (``layer_types`` ``full_attention``; default every
    4th, i % 4 == 3, or the last when there are fewer than 4) are OLMo 3's, post-norm:
    ``q_proj`` D -> H d, ``k_proj``/``v_proj`` D -> K d, ``o_proj``, RMSNorm ``q_norm`` (H d)
    and ``k_norm`` (K d) (K ``num_key_value_heads``, default H; d ``head_dim``, default D / H;
    biases when ``attention_bias``), rotary only when ``rope_parameters`` gives a
    ``rope_theta``. The others, pre-norm, Gated DeltaNet ``linear_attn``: ``q_proj``/``k_proj``
    D -> Hk dk, ``v_proj`` D -> Hv dv, ``a_proj``/``b_proj`` D -> Hv, ``g_proj`` D -> Hv dv,
    ``conv1d`` (2 Hk dk + Hv dv, 1, ``linear_conv_kernel_dim`` 4), ``A_log``/``dt_bias`` (Hv),
    gated RMSNorm ``o_norm`` (dv), ``o_proj`` (Hk ``linear_num_key_heads`` and Hv
    ``linear_num_value_heads``, default H; dk ``linear_key_head_dim``, default int(0.75 D /
    Hk); dv ``linear_value_head_dim``, default 2 dk). Final ``norm``; untied by default."""
    fields = standard_sizes(r)
    d_model, heads = fields["d_model"], fields["n_heads"]
    rope = r.data.get("rope_parameters")
    rotary = isinstance(rope, dict) and rope.get("rope_theta") is not None
    fields.update(
        n_kv_heads=r.value("n_kv_heads", "num_key_value_heads", default=None),
        head_dim=r.value("head_dim", "head_dim", default=None),
        position="rotary" if rotary else "none",
        norm="rmsnorm",
        qk_norm="full",
        fused_qkv=False,
        ffn="swiglu",
        ffn_bias=False,
        ffn_hidden=r.value("ffn_hidden", "intermediate_size", default=11008),
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=False),
    )
    floored_head_dim(r, fields)
    attention_bias(r, fields)
    key_heads = r.value("gated_deltanet", "linear_num_key_heads", default=heads)
    key_dim = None
    if is_whole(d_model, 1) and is_whole(key_heads, 1):
        key_dim = int(0.75 * d_model / key_heads)
    key_dim = r.value("gated_deltanet", "linear_key_head_dim", default=key_dim)
    net = {
        "mixer": "gated_deltanet",
        "gated_deltanet": {
            "key_heads": key_heads,
            "value_heads": r.value("gated_deltanet", "linear_num_value_heads", default=heads),
            "key_head_dim": key_dim,
            "value_head_dim": r.value(
                "gated_deltanet",
                "linear_value_head_dim",
                default=2 * key_dim if is_whole(key_dim, 1) else None,
            ),
            "conv_kernel": r.value("gated_deltanet", "linear_conv_kernel_dim", default=4),
            "split_projections": True,
            "separate_qkv": True,
        },
    }
    r.forget("gated_deltanet")
    return _hybrid(r, fields, net, _olmo_hybrid_rule)


def _olmo_hybrid_rule(n: int) -> hf_layers.Layout:
    """Without ``layer_types``: full attention where i % 4 == 3, Gated DeltaNet elsewhere; with
    fewer than 4 layers, attention on the last."""
    if n < 4:
        return hf_layers.Layout([("linear_attention", n - 1), ("full_attention", 1)])
    return hf_layers.every_nth(4, "full_attention", "linear_attention")


def kimi_linear(r: Reader) -> dict[str, Any]:
    """KimiLinearForCausalLM: ``embed_tokens`` (V x D); per layer ``input_layernorm`` and
    ``post_attention_layernorm`` (RMSNorm, D each), a mixer and an MLP. The mixer is multi-head
    latent attention without positions on the ``full_attention`` layers (:func:`_mla`), else
    Kimi Delta Attention (:func:`costcalc.tensors.kimi_delta_tensors`; H ``linear_num_heads``
    32, d ``linear_head_dim`` 128, k ``linear_conv_kernel_dim`` 4, or ``linear_attn_config``'s
    ``num_heads``, ``head_dim``, ``short_conv_kernel_size``). Layers as ``layer_types`` lists
    them, else ``linear_attn_config``'s 1-based ``full_attn_layers`` and ``kda_layers``, else
    attention where i > 0 and i % 4 == 0. The MLP is a SwiGLU of ``intermediate_size`` (9,216)
    on the first ``first_k_dense_replace`` (1) layers (or as ``mlp_layer_types`` says), else the
    MoE of :func:`_moe` (256 experts of 1,024, top 8). Final ``norm``; ``lm_head`` never tied."""
    lin = r.data.get("linear_attn_config")
    lin = lin if isinstance(lin, dict) else {}
    fields = _delta_fields(r, context=1048576, ffn_hidden=9216, rotary=False)
    mla = _mla(r, fields)
    delta = kimi_delta_block(r, heads=32)
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    listed = hf_layers.layer_types(r, n)
    full, kda = lin.get("full_attn_layers"), lin.get("kda_layers")
    if listed is None and isinstance(full, list) and isinstance(kda, list):
        if hf_layers.by_rule(r, n, "linear_attn_config.full_attn_layers") is None:
            return fields
        listed = _kimi_listed(r, n, full, kda)
        if listed is None:
            return fields
    blocks = _delta_blocks(mla, delta, _moe(r, (256, 8), 1024))
    _delta_layers(r, fields, n, listed, blocks, _kimi_mixer, 4, 1)
    return fields


def _kimi_listed(r: Reader, n: int, full: list[Any], kda: list[Any]) -> list[str] | None:
    """The layer kinds KimiLinearConfig's ``__post_init__`` derives from ``linear_attn_config``:
    n unset kinds, each 1-based entry of ``full_attn_layers`` set to full attention, then each
    of ``kda_layers`` to linear (``layer_types[layer - 1] = ...``: a layer past n is an
    IndexError, 0 and below count from the end as Python's negative indices do); a layer left
    unset is refused by the class's layer_types validation. None (and a problem) where
    transformers refuses the file."""
    kinds: list[str | None] = [None] * n
    for key, entries, kind in (
        ("full_attn_layers", full, "full_attention"),
        ("kda_layers", kda, "linear_attention"),
    ):
        for layer in entries:
            if not is_whole(layer):
                r.fail(f"linear_attn_config.{key}", f"expected layer numbers (got {layer!r})")
                return None
            if not -n <= layer - 1 < n:
                r.fail(
                    f"linear_attn_config.{key}",
                    f"layer {layer:,} is past the model's {n:,} layers: transformers refuses "
                    "the file (KimiLinearConfig's __post_init__ raises an IndexError)",
                )
                return None
            kinds[layer - 1] = kind
    unset = [i + 1 for i, kind in enumerate(kinds) if kind is None]
    if unset:
        r.fail(
            "linear_attn_config",
            f"full_attn_layers and kda_layers leave layer {unset[0]:,} without a kind: "
            "transformers refuses the file (KimiLinearConfig's layer_types validation)",
        )
        return None
    return [kind for kind in kinds if kind is not None]


def kimi_delta_block(r: Reader, heads: int) -> dict[str, Any]:
    """A Kimi Delta Attention block: H ``linear_num_heads`` (``heads``), d ``linear_head_dim``
    (128), k ``linear_conv_kernel_dim`` (4), or ``linear_attn_config``'s ``num_heads``,
    ``head_dim``, ``short_conv_kernel_size`` over them."""
    lin = r.data.get("linear_attn_config")
    lin = lin if isinstance(lin, dict) else {}
    sizes = {
        name: lin.get(nested) or r.value("kimi_delta", key, default=default)
        for name, nested, key, default in (
            ("heads", "num_heads", "linear_num_heads", heads),
            ("head_dim", "head_dim", "linear_head_dim", 128),
            ("conv_kernel", "short_conv_kernel_size", "linear_conv_kernel_dim", 4),
        )
    }
    r.forget("kimi_delta")
    return {"mixer": "kimi_delta", "kimi_delta": sizes}


RECURRENT_GEMMA_KINDS = {"recurrent": "linear_attention", "attention": "sliding_attention"}


def recurrent_gemma(r: Reader) -> dict[str, Any]:
    """RecurrentGemmaForCausalLM: ``embed_tokens`` (V x D, tied by default); per layer
    ``temporal_pre_norm`` and ``channel_pre_norm`` (RMSNorm, D each), a temporal block and a
    GeGLU ``mlp_block`` (``gate_proj``/``up_proj`` D -> h, ``down_proj``, all with biases; h =
    ``intermediate_size`` // 2, default 3 D // 2). The temporal block follows ``block_types``
    (recurrent, recurrent, attention), cycling: local attention (``q_proj`` D -> H d,
    ``k_proj``/``v_proj`` D -> K d, biases when ``attention_bias``, ``o_proj`` always with
    bias; d = D // H (floored, with a note, when H does not divide D: RecurrentGemmaConfig sets
    it), K ``num_key_value_heads`` (H), rotary on ``partial_rotary_factor`` (0.5),
    within ``attention_window_size`` (2,048)), or the recurrent block
    (:func:`costcalc.tensors.rg_lru_tensors`; W ``lru_width`` (D), H gate blocks, k
    ``conv1d_width`` (4)). Final ``final_norm``. No positions table and no length limit."""
    fields = {
        "vocab_size": r.size("vocab_size", "vocab_size"),
        "d_model": r.size("d_model", "hidden_size"),
        "n_layers": r.size("n_layers", "num_hidden_layers"),
        "context_length": r.value(
            "context_length", "max_position_embeddings", default=NO_POSITION_LIMIT
        ),
        "position": "rotary",
        "norm": "rmsnorm",
        "fused_qkv": False,
        "attn_out_bias": True,
        "ffn_bias": True,
        "tie_embeddings": r.value("tie_embeddings", "tie_word_embeddings", default=True),
    }
    d_model = fields["d_model"]
    heads = r.size("n_heads", "num_attention_heads")
    act = r.value("ffn", "hidden_activation", default="gelu_pytorch_tanh")
    fields["ffn"] = "geglu" if isinstance(act, str) and act.startswith("gelu") else "swiglu"
    hidden = r.value("ffn_hidden", "intermediate_size", default=None)
    if hidden is None and is_whole(d_model, 1):
        hidden = 3 * d_model
    if hidden == 1:
        r.unsupported(
            "intermediate_size",
            "1: transformers builds MLP projections intermediate_size // 2 = 0 wide (down_proj "
            "keeps only its bias); costcalc counts MLPs 1 or more wide",
        )
    fields["ffn_hidden"] = hidden // 2 if is_whole(hidden, 2) else hidden
    attention: dict[str, Any] = {"mixer": "attention", "n_heads": heads}
    attention["n_kv_heads"] = r.value("n_kv_heads", "num_key_value_heads", default=None)
    attention["qkv_bias"] = r.value("qkv_bias", "attention_bias", default=False)
    attention["sliding_window"] = r.value(
        "sliding_window", "attention_window_size", "sliding_window", default=2048
    )
    sizes = {"d_model": d_model, "n_heads": heads}
    floored_head_dim(r, sizes)  # the class sets head_dim = D // H whatever the file says
    attention["head_dim"] = sizes.get("head_dim")
    fields["rotary_dim"] = rotary_dim(r, sizes, ("partial_rotary_factor",), 0.5)
    width = r.value("rg_lru", "lru_width", default=None)
    recurrent = {
        "mixer": "rg_lru",
        "rg_lru": {
            "width": d_model if width is None else width,
            "heads": heads,
            "conv_kernel": r.value("rg_lru", "conv1d_width", default=4),
        },
    }
    r.forget("rg_lru")
    n = hf_layers.count_of(fields["n_layers"])
    kinds = r.data.get("block_types", ["recurrent", "recurrent", "attention"])
    known = isinstance(kinds, list) and all(
        isinstance(kind, str) and kind in RECURRENT_GEMMA_KINDS for kind in kinds
    )
    if not known or not kinds:
        r.fail("block_types", "expected a list of 'recurrent' and 'attention'")
        return fields
    if len(kinds) > hf_layers.MAX_LISTED_LAYERS:
        r.fail("block_types", "too many block types")
        return fields
    if n is not None:
        pattern = hf_layers.runs([RECURRENT_GEMMA_KINDS[kind] for kind in kinds])
        layout = hf_layers.Layout(pattern, cycles=True, key="block_types")
        blocks = {"linear_attention": recurrent, "sliding_attention": attention}
        hf_layers.set_layers(r, fields, n, layout, blocks)
    return fields


def bailing_hybrid(r: Reader) -> dict[str, Any]:
    """BailingHybridForCausalLM (Ling 2.5 hybrids): as kimi_linear, with rotary latent
    attention gated per head (``g_proj`` D -> H), and the Kimi Delta Attention's forget and
    output gates full rank (``forget_gate.f_proj`` and ``g_proj`` D -> H d) with H
    ``num_attention_heads``, d ``head_dim`` (128), k ``short_conv_kernel_size`` (4), or
    ``linear_num_heads``, ``linear_head_dim`` and ``linear_conv_kernel_dim`` where the file
    gives them (``BailingHybridConfig.__post_init__`` copies the first three into these and sets
    ``head_dim`` to ``qk_rope_head_dim``, so ``to_dict()`` writes both). Layers as
    ``layer_types`` lists them, else attention on every ``layer_group_size``-th (6); dense MLPs
    (``intermediate_size`` 6,144) on the first ``first_k_dense_replace`` (2) layers, else the
    MoE of :func:`_moe` (512 experts of 768, top 8). The multi-token-prediction layers
    (``num_mtp_layers``) are not built."""
    fields = _delta_fields(r, context=262144, ffn_hidden=6144, rotary=True)
    heads = fields["n_heads"]
    mla = {**_mla(r, fields), "attention_head_gate": True}
    delta = {
        "mixer": "kimi_delta",
        "kimi_delta": {
            "heads": r.value("kimi_delta", "linear_num_heads", default=heads),
            "head_dim": r.value("kimi_delta", "linear_head_dim", "head_dim", default=128),
            "conv_kernel": r.value(
                "kimi_delta", "linear_conv_kernel_dim", "short_conv_kernel_size", default=4
            ),
            "low_rank_gates": False,
        },
    }
    r.forget("kimi_delta")
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    group = r.count("layer_group_size", 6)
    if group > hf_layers.MAX_LISTED_LAYERS:
        r.fail("layer_group_size", "the layer pattern's period is too long")
        return fields

    def rule(i: int) -> str:
        return "full_attention" if (i + 1) % group == 0 else "linear_attention"

    blocks = _delta_blocks(mla, delta, _moe(r, (512, 8), 768))
    _delta_layers(r, fields, n, hf_layers.layer_types(r, n), blocks, rule, group, 2)
    return fields


def _delta_fields(r: Reader, *, context: int, ffn_hidden: int, rotary: bool) -> dict[str, Any]:
    """The model keys of kimi_linear and bailing_hybrid (their standard sizes required); the
    LM head is never tied (``tie_word_embeddings`` is not read)."""
    return {
        "vocab_size": r.size("vocab_size", "vocab_size"),
        "d_model": r.size("d_model", "hidden_size"),
        "n_layers": r.size("n_layers", "num_hidden_layers"),
        "n_heads": r.size("n_heads", "num_attention_heads"),
        "context_length": r.value(
            "context_length", "model_max_length", "max_position_embeddings", default=context
        ),
        "position": "rotary" if rotary else "none",
        "norm": "rmsnorm",
        "ffn": "swiglu",
        "ffn_bias": False,
        "ffn_hidden": r.value("ffn_hidden", "intermediate_size", default=ffn_hidden),
        # KimiLinearForCausalLM and BailingHybridForCausalLM declare no tied weights
        # (``_tied_weights_keys = {}``): the head is its own whatever tie_word_embeddings says.
        "tie_embeddings": False,
    }


def _mla(r: Reader, fields: dict[str, Any]) -> dict[str, Any]:
    """Multi-head latent attention as deepseek_v3 builds it (``q_proj`` D -> H (n + r), or the
    ``q_lora_rank`` path; ``kv_a_proj_with_mqa``, ``kv_a_layernorm``, ``kv_b_proj``,
    ``o_proj``), with these families' defaults: no query rank, ``kv_lora_rank`` 512, r
    ``qk_rope_head_dim`` 64, n ``qk_nope_head_dim`` 128, v ``v_head_dim`` 128, biases when
    ``attention_bias``; H moves from ``fields`` into the block."""
    mla: dict[str, Any] = {"mixer": "mla", "n_heads": fields.pop("n_heads")}
    attention_bias(r, mla)
    mla["q_lora_rank"] = r.nullable("q_lora_rank", "q_lora_rank", None)
    for field, default in (
        ("kv_lora_rank", 512),
        ("qk_rope_head_dim", 64),
        ("qk_nope_head_dim", 128),
        ("v_head_dim", 128),
    ):
        mla[field] = r.value(field, field, default=default)
    return mla


def _moe(r: Reader, experts: tuple[int, int], hidden: int) -> dict[str, Any]:
    """The sparse MLP: router ``mlp.gate`` (X x D, its ``e_score_correction_bias`` a buffer), X
    ``num_experts`` (or ``num_local_experts``) SwiGLU experts of ``moe_intermediate_size``, top
    ``num_experts_per_token`` (or ``num_experts_per_tok``), and ``shared_experts``: a SwiGLU of
    ``num_shared_experts`` (or ``n_shared_experts``, 1) x that width."""
    moe = routed_experts(
        r,
        ("num_experts", "num_local_experts"),
        ("num_experts_per_token", "num_experts_per_tok"),
        experts,
        (("moe_intermediate_size",), hidden),
    )
    shared = r.value("moe_shared_ffn_hidden", "num_shared_experts", "n_shared_experts", default=1)
    if is_whole(shared, 1) and is_whole(moe["moe_ffn_hidden"], 1):
        moe["moe_shared_ffn_hidden"] = shared * moe["moe_ffn_hidden"]
    return moe


def _delta_blocks(
    mla: dict[str, Any], delta: dict[str, Any], moe: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Every pairing of a mixer (attention or linear) with an MLP (dense or sparse)."""
    mixers = {"full_attention": mla, "linear_attention": delta}
    ffns: dict[str, dict[str, Any]] = {"dense": {}, "sparse": moe}
    return {f"{m}/{f}": {**mixer, **ffn} for m, mixer in mixers.items() for f, ffn in ffns.items()}


def _delta_layers(
    r: Reader,
    fields: dict[str, Any],
    n: int,
    mixers: list[str] | None,
    blocks: dict[str, Any],
    rule: Callable[[int], str],
    period: int,
    dense_default: int,
) -> None:
    """Each layer's mixer (``mixers`` as the file lists them, else ``rule``, whose kinds repeat
    every ``period`` layers from layer 1 on) and MLP (``mlp_layer_types``, else dense for the
    first ``first_k_dense_replace``): in closed form when the file lists neither (layer 0, the
    other dense layers and the sparse ones, each cycling through the rule)."""
    mlps = hf_layers.layer_types(r, n, "mlp_layer_types")
    dense = min(r.count("first_k_dense_replace", dense_default, minimum=0), n)
    if mixers is None and mlps is None:
        cuts = sorted({0, min(1, n), dense, n})
        fields["layers"] = [
            layer
            for start, end in pairwise(cuts)
            if end > start
            for layer in _delta_segment(
                start, end, "dense" if start < dense else "sparse", blocks, rule, period
            )
        ]
        return
    mixers = mixers or [rule(i) for i in range(n)]
    mlps = mlps or ["dense" if i < dense else "sparse" for i in range(n)]
    kinds = [f"{m}/{f}" for m, f in zip(mixers, mlps, strict=True)]
    hf_layers.apply(r, fields, hf_layers.runs(kinds), blocks)


def _kimi_mixer(i: int) -> str:
    """KimiLinearConfig's default: attention on layer i when i > 0 and i % 4 == 0."""
    return "full_attention" if i and i % 4 == 0 else "linear_attention"


def _delta_segment(
    start: int,
    end: int,
    ffn: str,
    blocks: dict[str, Any],
    rule: Callable[[int], str],
    period: int,
) -> list[dict[str, Any]]:
    """Layers start..end-1 with one MLP kind: their mixers by the rule, a cycling pattern when
    the segment holds more than one period (the rules repeat from layer 1 on)."""
    count = end - start
    if start > 0 and count > period:
        kinds = [f"{rule(i)}/{ffn}" for i in range(start, start + period)]
        return hf_layers.cycle(count, hf_layers.runs(kinds), blocks)
    kinds = [f"{rule(i)}/{ffn}" for i in range(start, end)]
    return hf_layers.groups(hf_layers.runs(kinds), blocks)


FAMILIES = {
    "lara_mini": lara_mini,
    "recurrent_gemma": recurrent_gemma,
    "bailing_hybrid": bailing_hybrid,
    "kimi_linear": kimi_linear,
    "lfm2": lfm2,
    "lfm3": lfm3,
    "olmo_hybrid": olmo_hybrid,
    "qwen3_5_moe_text": qwen3_5_moe_text,
    "qwen3_5_text": qwen3_5_text,
    "qwen3_next": qwen3_next,
    "qwen4_exp_text": qwen4_exp_text,
}


PEFT_NAMES = {
    **dict.fromkeys(("lara_mini", "qwen3_5_moe_text", "qwen3_5_text"), LLAMA),
    "recurrent_gemma": llama_names(
        {"attn": "temporal_block", "mlp": "mlp_block", "mixer": "temporal_block"}
    ),
    **dict.fromkeys(
        ("bailing_hybrid", "kimi_linear"),
        llama_names({"linear_attn": "self_attn"}, {**ROUTER_GATE, **SHARED_EXPERTS}),
    ),
    "lfm2": llama_names(FEED_FORWARD, LFM2_RENAMES),
    "lfm3": llama_names(
        FEED_FORWARD, {k: v for k, v in LFM2_RENAMES.items() if k != "attn.o_proj"}
    ),
    "olmo_hybrid": llama_names(
        renames={
            "linear_attn.in_proj_a": "linear_attn.a_proj",
            "linear_attn.in_proj_b": "linear_attn.b_proj",
            "linear_attn.in_proj_z": "linear_attn.g_proj",
            "linear_attn.out_proj": "linear_attn.o_proj",
        }
    ),
    "qwen3_next": QWEN2_MOE,
    "qwen4_exp_text": llama_names(
        {"attn_hc": "attn_hyper_connection", "ffn_hc": "mlp_hyper_connection"},
        {
            **ROUTER_GATE,
            "attn.indexer.qk_proj": "self_attn.indexer.index_qk_proj",
            "attn.indexer.q_norm": "self_attn.indexer.q_layernorm",
            "attn.indexer.k_norm": "self_attn.indexer.k_layernorm",
        },
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
