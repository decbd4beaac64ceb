"""Mixture-of-experts families whose layers differ twice: sliding-window or full attention, and a
dense or a sparse FFN (transformers 5.24, ``models/<family>/modeling_<family>.py``): afmoe,
exaone_moe, cohere2_moe, mimo_v2_flash and beam. Both per-layer rules become layer groups in
closed form (:func:`costcalc.formats.hf_layers.combine`): one group per run of FFN kinds, cycling
through the attention pattern from where the run starts."""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout, sliding_window
from costcalc.formats.families.llama_variants import _cohere_layout
from costcalc.formats.families.moe import routed_experts, shared_experts
from costcalc.formats.hf_reader import Reader, blocks, gate_without_bias, is_whole, rotary_width
from costcalc.formats.peft_names import DEEPSEEK, LLAMA, QWEN2_MOE, QWEN2_MOE_CONVERTED, llama_names


def _windows_and_experts(
    r: Reader,
    fields: dict[str, Any],
    window: Any,
    every: hf_layers.Layout,
    ffn_runs: list[tuple[str, int]],
    moe: dict[str, Any],
    dense: hf_layers.Block | None = None,
) -> None:
    """Attention as ``layer_types`` lists it, else the cycling rule ``every`` (all layers full
    without a window), with the FFN kinds ``ffn_runs`` (``dense``: ``dense``'s keys, ``sparse``:
    the block ``moe``)."""
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return
    listed = hf_layers.layer_types(r, n)
    if window is None:
        r.forget("sliding_window")
    if listed is not None:
        attention = hf_layers.Layout(hf_layers.runs(listed))
    elif window is None:
        attention = hf_layers.Layout([("full_attention", n)])
    else:
        attention = every
    blocks = hf_layers.attention_windows(window)
    ffn_blocks = {"dense": dense or {}, "sparse": moe}
    hf_layers.combine(r, fields, attention, blocks, ffn_runs, ffn_blocks)


def _ffn_runs(r: Reader, n: Any, key: str | None, default: int) -> list[tuple[str, int]]:
    """FFN kinds as ``mlp_layer_types`` lists them (``dense``/``sparse``), else the first
    ``key`` (``default``; a fixed count when the family has no key) layers dense."""
    count = hf_layers.count_of(n)
    if count is None:
        return []
    listed = hf_layers.layer_types(r, count, "mlp_layer_types")
    if listed is not None:
        return hf_layers.runs(listed)
    if key is None:
        return [("dense", min(default, count)), ("sparse", count - min(default, count))]
    return hf_layers.split_at(r, count, key, default, "dense", "sparse")


def afmoe(r: Reader) -> dict[str, Any]:
    """AfmoeForCausalLM (Arcee Trinity): the shared layout (key/value heads default to the
    heads, ``head_dim`` 128) with RMSNorm ``q_norm``/``k_norm`` of head_dim, a sigmoid output
    gate ``gate_proj`` (D -> H d, no bias: costcalc's ``attention_gate_proj``), four RMSNorms per
    block (before and after attention and the FFN), biases on q/k/v/o when ``attention_bias``
    (the gate has none); after ``num_dense_layers`` (1) dense layers the sparse block:
    ``router.gate`` (X x D, no bias), ``expert_bias`` (a parameter of X, not used in a product),
    X = ``num_experts`` (64) experts of ``moe_intermediate_size`` (1,408), top 6, and
    ``shared_experts`` (SwiGLU of ``moe_intermediate_size`` x ``num_shared_experts`` (2));
    untied by default. Layers attend within ``sliding_window`` (1,024) but every
    ``global_attn_every_n_layers``-th (4), unless ``layer_types`` lists them."""
    fields = llama_layout(r, head_dim=128)
    gate_without_bias(r, fields)
    fields.update(qk_norm="head", attention_gate=True, attention_gate_proj=True, norms_per_block=4)
    moe = routed_experts(
        r, ("num_experts",), ("num_experts_per_tok",), (64, 6), (("moe_intermediate_size",), 1408)
    )
    moe["moe_router_bias"] = True
    shared_experts(r, moe, "num_shared_experts", 2)
    window = sliding_window(r, default=1024)
    every = hf_layers.every_nth(
        r.count("global_attn_every_n_layers", 4), "full_attention", "sliding_attention"
    )
    ffn = _ffn_runs(r, fields["n_layers"], "num_dense_layers", 1)
    _windows_and_experts(r, fields, window, every, ffn, moe)
    return fields


def exaone_moe(r: Reader) -> dict[str, Any]:
    """ExaoneMoeForCausalLM (K-EXAONE): EXAONE 4's attention as a pre-norm block (RMSNorm
    ``q_norm``/``k_norm`` of head_dim, ``head_dim`` D / H unless given, 32 key/value heads by
    default, no biases; ``input_layernorm`` and ``post_attention_layernorm``); dense where
    ``mlp_layer_types`` says (default the first ``first_k_dense_replace``, 1), else the sparse
    block: ``mlp.gate`` (X x D; ``e_score_correction_bias`` a buffer), X = ``num_experts`` (64)
    experts of ``moe_intermediate_size`` (1,024), top 8, and ``shared_experts`` (SwiGLU of
    ``moe_intermediate_size`` x ``num_shared_experts`` (1)); untied by default. Layers attend
    within ``sliding_window`` (4,096; null: none) but every ``sliding_window_pattern``-th (4),
    unless ``layer_types`` lists them; without ``layer_types``, ExaoneMoeConfig's ``__post_init__``
    takes ``(i + 1) % sliding_window_pattern``, so a null pattern beside a window is refused."""
    fields = llama_layout(r, kv_heads=32)
    fields["qk_norm"] = "head"
    moe = routed_experts(
        r, ("num_experts",), ("num_experts_per_tok",), (64, 8), (("moe_intermediate_size",), 1024)
    )
    shared_experts(r, moe, "num_shared_experts", 1)
    window = sliding_window(r, default=4096)
    pattern_null = "sliding_window_pattern" in r.data and r.data["sliding_window_pattern"] is None
    if pattern_null and window is not None and r.data.get("layer_types") is None:
        r.fail(
            "sliding_window_pattern",
            "null beside a sliding window and no layer_types: transformers refuses the file "
            "(ExaoneMoeConfig's __post_init__ derives the layers as (i + 1) % "
            "sliding_window_pattern, a TypeError)",
        )
    if isinstance(r.data.get("sliding_window_pattern"), str):
        r.unsupported("sliding_window_pattern", "a pattern given as a string")
        period = 4
    else:
        period = r.count("sliding_window_pattern", 4)
    every = hf_layers.every_nth(period, "full_attention", "sliding_attention")
    ffn = _ffn_runs(r, fields["n_layers"], "first_k_dense_replace", 1)
    _windows_and_experts(r, fields, window, every, ffn, moe)
    return fields


def cohere2_moe(r: Reader) -> dict[str, Any]:
    """Cohere2MoeForCausalLM: Command R's parallel block (one weight-only LayerNorm per block,
    or RMSNorm when ``rms_norm_eps`` is given; q/k/v/o bias when ``attention_bias``; tied by
    default) with ``head_dim`` 128 (H d may differ from D); the sparse block ``mlp``: ``gate``
    (X x D, no bias), X = ``num_experts`` (8) experts of ``intermediate_size``, top 2, and
    ``shared_experts`` (SwiGLU of ``intermediate_size`` x ``num_shared_experts``, 0: none); the
    first ``first_k_dense_replace`` (0) layers (or those ``mlp_layer_types`` marks ``dense``)
    hold a SwiGLU of ``prefix_dense_intermediate_size`` (default ``intermediate_size``).
    Layers attend within ``sliding_window`` (4,096; null: none) as ``layer_types`` lists them,
    else every ``sliding_window_pattern``-th (4) layer after the dense ones is full, and every
    ``prefix_dense_sliding_window_pattern``-th (1) of the dense ones, each counted from its
    own first layer."""
    fields = _cohere_layout(r)
    fields["head_dim"] = r.value("head_dim", "head_dim", default=128)
    if r.data.get("rms_norm_eps") is not None:
        fields["norm"] = "rmsnorm"
    moe = routed_experts(r, ("num_experts",), ("num_experts_per_tok",), (8, 2))
    shared = r.value("moe_shared_ffn_hidden", "num_shared_experts", default=0)
    if shared and isinstance(fields["ffn_hidden"], int) and isinstance(shared, int):
        moe["moe_shared_ffn_hidden"] = fields["ffn_hidden"] * shared
    prefix_width = r.data.get("prefix_dense_intermediate_size")
    dense = {} if prefix_width is None else {"ffn_hidden": prefix_width}
    window = r.nullable("sliding_window", "sliding_window", 4096)
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    head = min(r.count("first_k_dense_replace", 0, minimum=0), n)
    mlp_listed = "mlp_layer_types" in r.data and r.data["mlp_layer_types"] is not None
    ffn = _ffn_runs(r, n, "first_k_dense_replace", 0)
    if r.data.get("layer_types") is not None or window is None or (head == 0):
        every = hf_layers.every_nth(
            r.count("sliding_window_pattern", 4), "full_attention", "sliding_attention"
        )
        _windows_and_experts(r, fields, window, every, ffn, moe, dense)
        return fields
    if mlp_listed:
        r.unsupported("mlp_layer_types", "dense layers listed beside first_k_dense_replace")
        return fields
    blocks = hf_layers.attention_windows(window)
    periods = [
        r.count("prefix_dense_sliding_window_pattern", 1),
        r.count("sliding_window_pattern", 4),
    ]
    fields["layers"] = [
        {
            "count": count,
            **block,
            "pattern": hf_layers.groups(
                [("sliding_attention", period - 1), ("full_attention", 1)], blocks
            ),
        }
        for count, block, period in zip((head, n - head), (dense, moe), periods, strict=True)
        if count
    ]
    return fields


def mimo_v2_flash(r: Reader) -> dict[str, Any]:
    """MiMoV2FlashForCausalLM (MiMo-V2-Flash): the shared layout (64 heads, 4 key/value heads,
    ``head_dim`` 192 for queries and keys) with values of ``v_head_dim`` (128): ``v_proj``
    D -> K dv, ``o_proj`` H dv -> D (no bias; q/k/v bias when ``attention_bias``). Sliding
    layers attend within ``sliding_window`` (129; ``sliding_window_size`` + 1 when given), with
    twice the key/value heads (2K) and a sink logit per head (``sinks``, H); the others attend
    fully: those ``layer_types`` marks, else the first layer and every 6th. Dense where
    ``mlp_layer_types`` says (default the first layer), else the sparse block without shared
    experts (``mlp.gate`` X x D, its ``e_score_correction_bias`` a buffer; X =
    ``n_routed_experts`` (256) experts of ``moe_intermediate_size`` (2,048), top 8); untied by
    default. Rotary positions (no parameters) as :func:`_mimo_rotary` reads them."""
    fields = _mimo_layers(r)
    _mimo_rotary(r, fields)
    return fields


def _mimo_rotary(r: Reader, fields: dict[str, Any]) -> None:
    """MiMo-V2-Flash's rotary part: ``int(head_dim x partial_rotary_factor)`` dimensions per
    head, the factor from the ``rope_parameters`` entry of each layer type the model has (0.334
    unless given; MiMoV2FlashRotaryEmbedding.compute_default_rope_parameters), read as
    :func:`~costcalc.formats.hf_reader.rotary_width` reads one; the whole head where the layer
    types give different factors (costcalc holds one rotary width per model)."""
    rope = r.data.get("rope_parameters")
    factors: dict[float, tuple[str, bool]] = {}
    for _, block in blocks(fields):
        kind = "full_attention" if block.get("sliding_window") is None else "sliding_attention"
        entry = rope.get(kind) if isinstance(rope, dict) else None
        factor = entry.get("partial_rotary_factor") if isinstance(entry, dict) else None
        key = r.name(f"rope_parameters.{kind}.partial_rotary_factor")
        if factor is None:
            factors[MIMO_ROTARY] = (f"MiMo-V2-Flash's partial_rotary_factor ({MIMO_ROTARY})", False)
        elif (
            isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 <= factor <= 1
        ):
            r.fail(key, f"expected a number from 0 to 1 (got {factor!r})")
            return
        else:
            factors[factor] = (key, True)
    if len(factors) == 1:
        factor, (key, given) = next(iter(factors.items()))
        fields["rotary_dim"] = rotary_width(r, fields, factor, key, given)


MIMO_ROTARY = 0.334
"""MiMoV2FlashConfig's partial-rotary factor for a layer type whose entry gives none."""


def _mimo_layers(r: Reader) -> dict[str, Any]:
    """MiMo-V2-Flash's sizes and layers (:func:`mimo_v2_flash`)."""
    fields = llama_layout(r, kv_heads=4, head_dim=192)
    fields["qkv_bias"] = r.value("qkv_bias", "attention_bias", default=False)
    fields["v_head_dim"] = r.value("v_head_dim", "v_head_dim", default=128)
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_local_experts"),
        ("num_experts_per_tok",),
        (256, 8),
        (("moe_intermediate_size",), 2048),
    )
    size = r.data.get("sliding_window_size")
    if size is not None:
        window = size + 1 if is_whole(size, 1) else size
        r.key_names["sliding_window"] = r.name("sliding_window_size")
    else:
        window = r.value("sliding_window", "sliding_window", default=129)
    n = hf_layers.count_of(fields["n_layers"])
    kv = fields["n_kv_heads"]
    if n is None or not is_whole(kv, 1):
        return fields
    blocks = {
        "full_attention": {},
        "sliding_attention": {
            "sliding_window": window,
            "n_kv_heads": 2 * kv,
            "attention_sinks": True,
        },
    }
    ffn = _ffn_runs(r, n, None, 1)
    ffn_blocks = {"dense": {}, "sparse": moe}
    listed = hf_layers.layer_types(r, n)
    if listed is not None:
        hf_layers.combine(
            r, fields, hf_layers.Layout(hf_layers.runs(listed)), blocks, ffn, ffn_blocks
        )
        return fields
    # The first layer attends fully; from the second on, every 6th ((i + 1) % 6 == 0).
    first, *rest = [(kind, count) for kind, count in ffn if count]
    fields["layers"] = [{"count": 1, **ffn_blocks[first[0]]}]
    rest = [(first[0], first[1] - 1), *rest]
    every = hf_layers.every_nth(6, "full_attention", "sliding_attention")
    hf_layers.combine(r, fields, every, blocks, rest, ffn_blocks, offset=1)
    return fields


BEAM_SIZES: dict[str, Any] = {
    "vocab_size": 151936,
    "d_model": 5120,
    "n_layers": 52,
    "n_heads": 48,
    "context_length": 8192,
    "ffn_hidden": 20480,
}
"""``BeamConfig``'s defaults for the standard sizes."""


def beam(r: Reader) -> dict[str, Any]:
    """BeamForCausalLM (Beam 1.0): the shared layout (8 key/value heads, ``head_dim`` 128;
    biases on q/k/v/o when ``attention_bias``, none on the gate) with RMSNorm
    ``q_norm``/``k_norm`` of d, a sigmoid output gate
    ``gate_proj`` (D -> H d, no bias; costcalc's ``attention_gate_proj``) plus ``gate_bias`` (one
    per head, H: ``attention_gate_bias``), four RMSNorms per block; dense SwiGLU of
    ``intermediate_size`` where ``mlp_layer_types`` says (default the first three layers), else
    the sparse block without shared experts (``mlp.gate`` X x D, its ``e_score_correction_bias``
    a buffer; X = ``num_experts`` (256) experts of ``moe_intermediate_size`` (2,560), top 8);
    untied by default. Layers attend within ``sliding_window`` (512; null: none) as
    ``layer_types`` lists them, else every 6th layer and the last attend fully. Full layers
    have no positions; the depth-scaled residuals and the logit soft cap hold no parameters.
    Heads 1 wide where some layers rotate and others do not are refused
    (:func:`_beam_positions`)."""
    fields = _beam_layers(r)
    _beam_positions(r, fields)
    return fields


def _beam_positions(r: Reader, fields: dict[str, Any]) -> None:
    """A layer type rotates where its ``rope_parameters`` entry is set (BeamModel: ``None``
    runs without positions; by default the sliding layers rotate, the full ones do not). Heads
    1 wide are refused where both kinds of layer are built: a rotated layer's queries and keys
    broadcast against 2-wide cos and sin (:mod:`costcalc.formats.hf_rotary`), an unrotated
    layer's stay 1 wide, and costcalc holds one key width per model."""
    rope = r.data.get("rope_parameters")
    if not isinstance(rope, dict):
        rope = {"sliding_attention": {}, "full_attention": None}
    rotated = set()
    for _, block in blocks(fields):
        kind = "full_attention" if block.get("sliding_window") is None else "sliding_attention"
        rotated.add(rope.get(kind) is not None)
        head, d, h = block.get("head_dim"), block.get("d_model"), block.get("n_heads")
        if head is None and is_whole(d, 1) and is_whole(h, 1) and d % h == 0:
            head = d // h
    if rotated == {True, False} and head == 1:
        r.unsupported(
            "head_dim",
            "heads 1 wide on some layers rotated and others not (rope_parameters None): "
            "transformers' rotated keys broadcast to 2 wide, the others stay 1 wide; costcalc "
            "holds one key width per model",
        )


def _beam_layers(r: Reader) -> dict[str, Any]:
    """Beam's sizes and layers (:func:`beam`)."""
    fields = llama_layout(r, kv_heads=8, head_dim=128, sizes=BEAM_SIZES)
    gate_without_bias(r, fields)
    fields.update(
        qk_norm="head",
        attention_gate=True,
        attention_gate_proj=True,
        attention_gate_bias=True,
        norms_per_block=4,
    )
    moe = routed_experts(
        r, ("num_experts",), ("num_experts_per_tok",), (256, 8), (("moe_intermediate_size",), 2560)
    )
    window = sliding_window(r, default=512)
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    ffn = _ffn_runs(r, n, None, 3)
    if r.data.get("layer_types") is not None or window is None:
        every = hf_layers.Layout([("full_attention", n)])
        _windows_and_experts(r, fields, window, every, ffn, moe)
        return fields
    # Every 6th layer ((i + 1) % 6 == 0) attends fully, and so does the last.
    attention = hf_layers.attention_windows(window)
    ffn_blocks = {"dense": {}, "sparse": moe}
    every = hf_layers.every_nth(6, "full_attention", "sliding_attention")
    hf_layers.combine(r, fields, every, attention, hf_layers.cut(ffn, 0, n - 1), ffn_blocks)
    last = hf_layers.merge([("full_attention", 1)], hf_layers.cut(ffn, n - 1, n))
    blocks = hf_layers.merged_blocks(attention, ffn_blocks)
    fields["layers"] = [*fields.get("layers", []), *hf_layers.groups(last, blocks)]
    return fields


FAMILIES = {
    "beam": beam,
    "afmoe": afmoe,
    "cohere2_moe": cohere2_moe,
    "exaone_moe": exaone_moe,
    "mimo_v2_flash": mimo_v2_flash,
}


PEFT_NAMES = {
    "beam": QWEN2_MOE,
    "afmoe": llama_names(
        renames={
            "mlp.router": "mlp.router.gate",
            **{
                f"mlp.shared_expert.{p}": f"mlp.shared_experts.{p}"
                for p in ("gate_proj", "up_proj", "down_proj")
            },
        },
        router_linear=True,
        converted=QWEN2_MOE_CONVERTED,
        loose_biases=("mlp.router",),
    ),
    **dict.fromkeys(("cohere2_moe", "exaone_moe"), DEEPSEEK),
    "mimo_v2_flash": LLAMA,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
