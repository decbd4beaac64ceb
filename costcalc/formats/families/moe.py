"""Hugging Face mixture-of-experts families built like Llama (:func:`llama_layout`), with some or
all FFNs replaced by a sparse MoE block: qwen2_moe, qwen3_moe, olmoe, granitemoe, phimoe,
glm4_moe and ernie4_5_moe.

A MoE block holds ``mlp.gate`` (the router, X x D, no bias) and ``mlp.experts`` with the X
experts stacked (``gate_up_proj`` X x 2h x D, ``down_proj`` X x D x h, h =
``moe_intermediate_size``), X = ``num_experts``, each token routed to ``num_experts_per_tok``
(transformers 5.24, ``models/<family>/modeling_<family>.py``). Which layers are sparse is a rule
(``decoder_sparse_step``, ``mlp_only_layers``, ``first_k_dense_replace``): it becomes layer groups
(:func:`sparse_layers`), in closed form unless the file lists the layers itself.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import (
    heads_span_width,
    llama_layout,
    qwen3_layout,
    sliding_window,
)
from costcalc.formats.families.olmo2 import olmo2
from costcalc.formats.hf_reader import (
    Reader,
    attention_bias,
    is_whole,
    linear_bias,
    mlp_bias,
    rotary_dim,
)
from costcalc.formats.peft_names import (
    DEEPSEEK,
    DEEPSEEK_NAMES,
    GRANITE_SHARED_MLP,
    LLAMA,
    MIXTRAL_CONVERTED,
    QWEN2_MOE,
    QWEN2_MOE_CONVERTED,
    ROUTER_GATE,
    llama_names,
)


def routed_experts(
    r: Reader,
    experts: tuple[str, ...],
    top_k: tuple[str, ...],
    defaults: tuple[Any, Any],
    hidden: tuple[tuple[str, ...], Any] | None = None,
) -> dict[str, Any]:
    """The keys of a sparse block: experts X and top-k, and the expert width h when its keys
    differ from the dense FFN's (``hidden``: keys and default), read with the family's defaults
    (a default of None makes the key required)."""
    wanted = [("moe_experts", experts, defaults[0]), ("moe_top_k", top_k, defaults[1])]
    if hidden is not None:
        wanted.append(("moe_ffn_hidden", *hidden))
    return {
        field: r.size(field, *keys) if default is None else r.value(field, *keys, default=default)
        for field, keys, default in wanted
    }


def sparse_layers(
    r: Reader, fields: dict[str, Any], moe: hf_layers.Block, step: int = 1, dense_layers: Any = ()
) -> None:
    """Layer i is sparse as :func:`sparse_layout` says; the others keep the dense FFN of
    ``fields``."""
    n = hf_layers.count_of(fields["n_layers"])
    layout = None if n is None else sparse_layout(r, n, step, dense_layers)
    if n is not None and layout is not None:
        hf_layers.set_layers(r, fields, n, layout, {"dense": {}, "moe": moe})


def sparse_layout(r: Reader, n: int, step: int, dense_layers: Any) -> hf_layers.Layout | None:
    """Layer i is ``moe`` when it is not in ``dense_layers`` (``mlp_only_layers``, from the
    file) and (i + 1) is a multiple of ``step`` (``decoder_sparse_step``), else ``dense``
    (Qwen2-MoE's, Qwen3-MoE's and Qwen3-Next's decoder layers). Closed form unless
    ``dense_layers`` lists layers; None when that list is unusable (a problem is recorded)."""
    if not dense_layers:
        if step != 1:
            r.key_names["layers"] = r.name("decoder_sparse_step")
        return hf_layers.every_nth(step, "moe", "dense")
    if not isinstance(dense_layers, list) or not all(is_whole(i) for i in dense_layers):
        r.fail("mlp_only_layers", "expected a list of layer indices")
        return None
    indices = hf_layers.by_rule(r, n, "mlp_only_layers")
    if indices is None:
        return None
    dense = set(dense_layers)
    kinds = ["moe" if i not in dense and (i + 1) % step == 0 else "dense" for i in indices]
    r.key_names["layers"] = r.name("mlp_only_layers")
    return hf_layers.Layout(hf_layers.runs(kinds), key="mlp_only_layers")


def first_dense(r: Reader, fields: dict[str, Any], moe: hf_layers.Block, default: int) -> None:
    """Dense FFNs in the first ``first_k_dense_replace`` layers (``default``), the sparse block
    ``moe`` in the others."""
    n = hf_layers.count_of(fields["n_layers"])
    if n is not None:
        kind_runs = hf_layers.split_at(r, n, "first_k_dense_replace", default, "dense", "moe")
        hf_layers.apply(r, fields, kind_runs, {"dense": {}, "moe": moe}, "first_k_dense_replace")


def listed_sparse(
    r: Reader,
    fields: dict[str, Any],
    moe: hf_layers.Block,
    default: int,
    key: str | None,
    freq: bool = False,
) -> None:
    """Dense and sparse FFNs as ``mlp_layer_types`` lists them (``dense``, ``sparse``), else
    dense in the first ``key`` layers (``default``; a fixed count when the family has no key)
    and sparse in the others; with ``freq``, sparse only where i % ``moe_layer_freq`` (1) is 0
    (A.X K1's and K2's ``__post_init__``: ``i >= first_k_dense_replace and i % moe_layer_freq
    == 0``)."""
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return
    blocks = {"dense": {}, "sparse": moe}
    listed = hf_layers.layer_types(r, n, "mlp_layer_types")
    if listed is not None:
        hf_layers.apply(r, fields, hf_layers.runs(listed), blocks, "mlp_layer_types")
    elif key is None:
        head = min(default, n)
        hf_layers.apply(r, fields, [("dense", head), ("sparse", n - head)], blocks)
    else:
        every = r.count("moe_layer_freq", 1) if freq else 1
        kind_runs = hf_layers.split_at(r, n, key, default, "dense", "sparse")
        if every != 1:
            if hf_layers.by_rule(r, n, "moe_layer_freq") is None:
                return
            head = kind_runs[0][1]
            kinds = ["sparse" if i >= head and i % every == 0 else "dense" for i in range(n)]
            kind_runs = hf_layers.runs(kinds)
        hf_layers.apply(r, fields, kind_runs, blocks, key)


def _qwen_moe(r: Reader, fields: dict[str, Any], moe: dict[str, Any]) -> None:
    """Sparse layers of Qwen2-MoE and Qwen3-MoE (none when ``num_experts`` is 0)."""
    if moe.get("moe_experts") == 0:
        return
    step = r.count("decoder_sparse_step", 1)
    dense = r.data.get("mlp_only_layers") or ()
    sparse_layers(r, fields, moe, step, dense)


def qwen3_sparse(
    r: Reader, fields: dict[str, Any], experts: tuple[str, ...], defaults: tuple[int, int, int]
) -> None:
    """Qwen3-MoE's FFNs: the sparse block above (``experts`` keys; defaults: experts, top-k,
    ``moe_intermediate_size``) in every ``decoder_sparse_step``-th layer not in
    ``mlp_only_layers``, a dense SwiGLU MLP of ``intermediate_size`` elsewhere."""
    experts_k, hidden = defaults[:2], (("moe_intermediate_size",), defaults[2])
    moe = routed_experts(r, experts, ("num_experts_per_tok",), experts_k, hidden)
    _qwen_moe(r, fields, moe)


def qwen3_moe(r: Reader) -> dict[str, Any]:
    """Qwen3MoeForCausalLM: Qwen3's attention (:func:`qwen3_layout`, 4 key/value heads by
    default; Qwen3MoeConfig has no ``head_dim``, so D / H unless the file gives one) and
    :func:`qwen3_sparse` (128 experts of 768, top 8 by default); untied by default; with
    ``use_sliding_window`` every layer attends within ``sliding_window``."""
    fields = qwen3_layout(r, kv_heads=4, head_dim=None)
    if r.flag("use_sliding_window", False):
        fields["sliding_window"] = sliding_window(r, default=4096)
    qwen3_sparse(r, fields, ("num_experts",), (128, 8, 768))
    return fields


def qwen2_moe(r: Reader) -> dict[str, Any]:
    """Qwen2MoeForCausalLM: Qwen2's attention (bias on q/k/v when ``qkv_bias``, default true,
    none on ``o_proj``), the sparse block above (60 experts of 1,408, top 4 by default) plus
    ``mlp.shared_expert`` (a SwiGLU MLP of ``shared_expert_intermediate_size``) gated by
    ``mlp.shared_expert_gate`` (D -> 1, no bias; built, and the shared expert empty, when the
    width is 0), in every ``decoder_sparse_step``-th layer not in
    ``mlp_only_layers``; a dense MLP of ``intermediate_size`` elsewhere; untied by default. With
    ``use_sliding_window``, some layers attend within a window (:func:`qwen2_moe_windows`)."""
    fields = llama_layout(r, kv_heads=16)
    fields["qkv_bias"] = r.value("qkv_bias", "qkv_bias", default=True)
    fields["attn_out_bias"] = False
    moe = routed_experts(
        r, ("num_experts",), ("num_experts_per_tok",), (60, 4), (("moe_intermediate_size",), 1408)
    )
    shared = r.value("moe_shared_ffn_hidden", "shared_expert_intermediate_size", default=5632)
    moe["moe_shared_ffn_hidden"] = None if shared == 0 else shared
    moe["moe_shared_gate"] = True
    if r.flag("use_sliding_window", False):
        qwen2_moe_windows(r, fields, moe)
    else:
        _qwen_moe(r, fields, moe)
    return fields


def qwen2_moe_windows(r: Reader, fields: dict[str, Any], moe: dict[str, Any]) -> None:
    """Qwen2MoeConfig with ``use_sliding_window``: layer i attends within ``sliding_window``
    (4,096) where ``layer_types`` marks it ``sliding_attention``, else (its ``__post_init__``)
    where i is even and below ``max_window_layers`` (28); its FFN as :func:`_qwen_moe` says. In
    closed form: one group per run of FFN kinds, below ``max_window_layers`` cycling through
    sliding and full attention. A null window is refused: the rule still marks layers sliding,
    and transformers' sliding mask and cache cannot run without a window."""
    window = sliding_window(r, default=4096)
    if window is None:
        r.fail(
            "sliding_window",
            "null, but use_sliding_window makes Qwen2MoeConfig mark layers sliding_attention, "
            "which transformers cannot run without a window; give one or set "
            "use_sliding_window false",
        )
        return
    n = hf_layers.count_of(fields["n_layers"])
    ffn = None if n is None else _ffn_kinds(r, moe, n)
    if n is None or ffn is None:
        return
    windows = hf_layers.attention_windows(window)
    blocks: dict[str, hf_layers.Block] = {"dense": {}, "moe": moe}
    listed = hf_layers.layer_types(r, n)
    if listed is not None:
        hf_layers.combine(r, fields, hf_layers.Layout(hf_layers.runs(listed)), windows, ffn, blocks)
        return
    below = r.count("max_window_layers", 28, minimum=0)
    head = min(below, n)
    r.note(
        f"{r.name('use_sliding_window')}: Qwen2-MoE slides the even layers below "
        f"max_window_layers ({below:,}), where Qwen2 slides those from it on: "
        f"{(head + 1) // 2:,} of {n:,} layers attend within {window:,}, the others fully."
    )
    alternate = hf_layers.every_nth(2, "full_attention", "sliding_attention")
    hf_layers.combine(r, fields, alternate, windows, hf_layers.cut(ffn, 0, head), blocks)
    rest = hf_layers.groups(hf_layers.cut(ffn, head, n), blocks)
    fields["layers"] = [*fields.get("layers", ()), *rest]


def _ffn_kinds(r: Reader, moe: dict[str, Any], n: int) -> list[tuple[str, int]] | None:
    """Runs of Qwen2-MoE's FFN kinds over its n layers (``dense``, ``moe``): as
    :func:`_qwen_moe` lays them out, all dense when ``num_experts`` is 0 (None: a problem is
    recorded)."""
    if moe.get("moe_experts") == 0:
        return [("dense", n)]
    step = r.count("decoder_sparse_step", 1)
    layout = sparse_layout(r, n, step, r.data.get("mlp_only_layers") or ())
    return None if layout is None else hf_layers.unrolled(r, layout, n)


def _every_layer_sparse(
    r: Reader, fields: dict[str, Any], experts: tuple[str, ...], defaults: tuple[Any, Any]
) -> dict[str, Any]:
    """Every layer's FFN is the sparse block, its experts as wide as ``intermediate_size``."""
    fields.update(routed_experts(r, experts, ("num_experts_per_tok",), defaults))
    return fields


def olmoe(r: Reader) -> dict[str, Any]:
    """OlmoeForCausalLM: the shared layout with RMSNorm ``q_norm`` over the whole query
    projection (H d) and ``k_norm`` over the keys (K d), q/k/v/o bias when ``attention_bias``,
    and the sparse block in every layer (``mlp.gate`` X x D, experts of ``intermediate_size``;
    64 experts, top 8 by default); untied by default. The norms are built of D and
    (D // H) K: a ``head_dim`` with H d other than D is refused (the norms would not fit the
    projections)."""
    fields = llama_layout(r)
    attention_bias(r, fields)
    fields["qk_norm"] = "full"
    heads_span_width(r, fields, "OlmoeAttention sizes q_norm and k_norm from hidden_size")
    return _every_layer_sparse(r, fields, ("num_experts", "num_local_experts"), (64, 8))


def granitemoe(r: Reader) -> dict[str, Any]:
    """GraniteMoeForCausalLM: the shared layout, q/k/v/o bias when ``attention_bias``, and in
    every layer ``block_sparse_moe``: ``router`` (X x D, no bias) and experts of
    ``intermediate_size`` (8 experts, top 2 by default); untied by default. The multipliers
    (embedding, residual, attention, logits) scale activations and hold no parameters."""
    fields = llama_layout(r)
    attention_bias(r, fields)
    return _every_layer_sparse(r, fields, ("num_local_experts",), (8, 2))


def minimax_m2(r: Reader) -> dict[str, Any]:
    """MiniMaxM2ForCausalLM: the shared layout (48 heads, 8 key/value heads, ``head_dim`` 128
    by default; no biases) with RMSNorm ``q_norm`` over the whole query projection (H d) and
    ``k_norm`` over the keys (K d), rotary on ``partial_rotary_factor`` (1) of each head, and
    the sparse block in every layer (``mlp.gate`` X x D, its ``e_score_correction_bias`` a
    buffer; X = ``num_local_experts`` (256) experts of ``intermediate_size``, top 8); untied by
    default. The multi-token-prediction modules are not built."""
    fields = llama_layout(r, kv_heads=8, head_dim=128)
    fields["qk_norm"] = "full"
    fields["rotary_dim"] = rotary_dim(r, fields, ("partial_rotary_factor",), 1.0)
    return _every_layer_sparse(r, fields, ("num_local_experts", "num_experts"), (256, 8))


def granitemoeshared(r: Reader) -> dict[str, Any]:
    """GraniteMoeSharedForCausalLM: GraniteMoE's layout and sparse block, plus in every layer
    ``shared_mlp`` when ``shared_intermediate_size`` (0: none) is above 0: ``input_linear``
    (D -> 2 s, gate and up in one) and ``output_linear`` (s -> D), no biases."""
    fields = granitemoe(r)
    shared = r.value("moe_shared_ffn_hidden", "shared_intermediate_size", default=0)
    fields["moe_shared_ffn_hidden"] = None if shared == 0 else shared
    fields["fused_gate_up"] = True
    return fields


def phimoe(r: Reader) -> dict[str, Any]:
    """PhimoeForCausalLM: the shared layout but with LayerNorm (weight and bias) for both block
    norms and the final norm, q/k/v/o bias when ``attention_bias``, an LM head bias when
    ``lm_head_bias``, 8 key/value heads by default, and the sparse block in every layer
    (``mlp.router`` X x D, no bias; 16 experts of ``intermediate_size``); each token runs 2
    experts whatever ``num_experts_per_tok`` says (``sparsemixer`` picks the best expert, then
    the best of the others); untied by default; every layer attends within ``sliding_window``
    when it is given."""
    fields = llama_layout(r, kv_heads=8)
    attention_bias(r, fields)
    fields["norm"] = "layernorm"
    fields["lm_head_bias"] = r.value("lm_head_bias", "lm_head_bias", default=False)
    fields["sliding_window"] = r.value("sliding_window", "sliding_window", default=None)
    _every_layer_sparse(r, fields, ("num_local_experts",), (16, 2))
    if fields["moe_top_k"] != 2:
        r.note(
            f"num_experts_per_tok is {fields['moe_top_k']!r}, but PhimoeForCausalLM routes "
            "each token to 2 experts (its sparsemixer picks two, whatever the key says): "
            "counted with 2."
        )
        fields["moe_top_k"] = 2
    return fields


def sparse_span(
    fields: dict[str, Any], moe: hf_layers.Block, first: int, last: int, step: int
) -> None:
    """Layer i is sparse when first <= i <= last and (i + 1) is a multiple of ``step``; the
    others keep the dense FFN of ``fields``. In closed form: dense layers up to the first sparse
    one, then ``step``-long cycles (sparse, then dense) up to ``last``, then dense layers."""
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return
    last = min(last, n - 1)
    start = max(first, 0)
    start += (step - 1 - start) % step  # the first sparse layer
    if start > last:
        return
    blocks: dict[str, hf_layers.Block] = {"dense": {}, "moe": moe}
    span = last - start + 1
    if step == 1:
        middle = hf_layers.groups([("moe", span)], blocks)
    else:
        middle = hf_layers.cycle(span, [("moe", 1), ("dense", step - 1)], blocks)
    head = hf_layers.groups([("dense", start)], blocks)
    tail = hf_layers.groups([("dense", n - 1 - last)], blocks)
    if not head and not tail and step == 1:
        fields.update(moe)
    else:
        fields["layers"] = head + middle + tail


def ernie4_5_moe(r: Reader) -> dict[str, Any]:
    """Ernie4_5_MoeForCausalLM: the shared layout (4 key/value heads by default) and, in layers
    ``moe_layer_start_index`` (1) to ``moe_layer_end_index`` (-1: the last) that are a multiple
    of ``moe_layer_interval`` (1) counting from 1, the sparse block: ``mlp.gate`` (X x D, no
    bias) with ``mlp.gate.moe_statics.e_score_correction_bias`` (a parameter of X, not used in a
    product), X = ``moe_num_experts`` (64) experts of ``moe_intermediate_size`` (1,536), top
    ``moe_k`` (6), and ``mlp.shared_experts`` (one SwiGLU MLP of ``moe_intermediate_size`` x
    ``moe_num_shared_experts`` (2)); a dense MLP of ``intermediate_size`` elsewhere. Tied by
    default; ``use_bias`` biases every linear layer but the experts, the LM head's too."""
    fields, moe = ernie_sparse_block(r, (("moe_intermediate_size",), 1536))
    fields["lm_head_bias"] = fields["ffn_bias"]
    shared_experts(r, moe, "moe_num_shared_experts", 2)
    first = r.value("layers", "moe_layer_start_index", default=1)
    last = r.value("layers", "moe_layer_end_index", default=-1)
    step = r.value("layers", "moe_layer_interval", default=1)
    n = fields["n_layers"]
    if not all(is_whole(v) for v in (first, last, n)) or not is_whole(step, 1):
        r.fail("moe_layer_interval", "expected whole numbers of layers")
        return fields
    sparse_span(fields, moe, first, n - 1 if last == -1 else last, step)
    return fields


def ernie_sparse_block(
    r: Reader, hidden: tuple[tuple[str, ...], Any] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """ERNIE 4.5's shared layout (4 key/value heads, tied by default) and the keys of its sparse
    block: X = ``moe_num_experts`` (64), top ``moe_k`` (6), the router's
    ``e_score_correction_bias`` of X, and the experts' width (``hidden``: keys and default, or
    None when the family reads it itself); ``use_bias`` biases q/k/v/o and the dense and shared
    MLPs, never the experts."""
    fields = llama_layout(r, kv_heads=4, tie=True)
    linear_bias(r, fields, "use_bias", default=False)
    moe = routed_experts(
        r, ("moe_num_experts", "num_experts"), ("moe_k", "num_experts_per_tok"), (64, 6), hidden
    )
    moe["moe_router_bias"] = True
    experts_without_bias(fields, moe)
    return fields, moe


def mlp_bias_not_experts(r: Reader, fields: dict[str, Any], moe: dict[str, Any]) -> None:
    """The dense and shared MLPs carry a bias when ``mlp_bias`` (:func:`mlp_bias`), the routed
    experts none (:func:`experts_without_bias`)."""
    mlp_bias(r, fields)
    experts_without_bias(fields, moe)


def experts_without_bias(fields: dict[str, Any], moe: dict[str, Any]) -> None:
    """The routed experts carry no bias (stacked ``nn.Parameter``s without one) where the
    block's dense and shared MLPs carry one (``fields["ffn_bias"]``)."""
    if fields.get("ffn_bias") is True:
        moe["moe_expert_bias"] = False


def shared_experts(
    r: Reader, moe: dict[str, Any], key: str | tuple[str, ...], default: int
) -> None:
    """A shared expert as wide as ``key`` (the first of these keys) routed experts (none when it
    is 0)."""
    keys = (key,) if isinstance(key, str) else key
    shared = r.value("moe_shared_ffn_hidden", *keys, default=default)
    hidden = moe.get("moe_ffn_hidden")
    if is_whole(shared, 1) and is_whole(hidden):
        moe["moe_shared_ffn_hidden"] = hidden * shared


def glm4_moe(r: Reader) -> dict[str, Any]:
    """Glm4MoeForCausalLM: the shared layout (96 heads, 8 key/value heads by default, H d may
    differ from D) with a bias on q/k/v when ``attention_bias`` (never on ``o_proj``), RMSNorm
    ``q_norm``/``k_norm`` of head_dim when ``use_qk_norm``, rotary on ``partial_rotary_factor``
    (0.5) of each head; after ``first_k_dense_replace`` (1) dense layers the sparse block
    (``mlp.gate`` X x D, its ``e_score_correction_bias`` a buffer; X = ``n_routed_experts``
    (128) of ``moe_intermediate_size`` (1,408), top 8) with ``mlp.shared_experts`` (one SwiGLU
    MLP of ``moe_intermediate_size`` x ``n_shared_experts`` (1)); untied by default. The
    multi-token-prediction layers are not built."""
    return glm4_moe_layout(r, (8, None), False, 0.5, ((128, 8), 1408, 1, 1))


def sarvam_moe(r: Reader) -> dict[str, Any]:
    """SarvamMoEForCausalLM (Sarvam-30B; built by transformers as Glm4MoeForCausalLM): GLM-4.5's
    layout with SarvamMoEConfig's defaults: 4 key/value heads, ``head_dim`` 64, q/k norms on
    (``use_qk_norm`` true), rotary on every dimension, 128 experts of 1,024, top 6, one shared
    (``num_shared_experts`` names it too), one dense layer; ``use_qkv_bias`` names
    ``attention_bias``."""
    return glm4_moe_layout(r, (4, 64), True, 1.0, ((128, 6), 1024, 1, 1))


def glm4_moe_layout(
    r: Reader,
    attention: tuple[int, int | None],
    qk_norm: bool | None,
    rotary: float,
    moe_defaults: tuple[tuple[int, int], int, int, int],
    bias: bool = False,
    sizes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """GLM-4.5's layout with a configuration class's defaults: key/value heads and head_dim,
    ``use_qk_norm`` (None: no query/key norms, the key not read), the rotary factor, (experts,
    top-k), expert width, shared experts and dense layers, ``attention_bias`` and the sizes."""
    fields = llama_layout(r, kv_heads=attention[0], head_dim=attention[1], sizes=sizes)
    fields["qkv_bias"] = r.value("qkv_bias", "attention_bias", "use_qkv_bias", default=bias)
    fields["attn_out_bias"] = False
    if qk_norm is not None and r.flag("use_qk_norm", qk_norm):
        fields["qk_norm"] = "head"
    fields["rotary_dim"] = rotary_dim(r, fields, ("partial_rotary_factor",), rotary)
    experts, hidden, shared, dense = moe_defaults
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_local_experts", "num_experts"),
        ("num_experts_per_tok",),
        experts,
        (("moe_intermediate_size",), hidden),
    )
    shared_experts(r, moe, ("n_shared_experts", "num_shared_experts"), shared)
    first_dense(r, fields, moe, dense)
    return fields


def hunyuan_v1_moe(r: Reader) -> dict[str, Any]:
    """HunYuanMoEV1ForCausalLM (Hunyuan-A13B): the shared layout (key/value heads default to the
    heads, ``head_dim`` to D / H), q/k/v/o bias when ``attention_bias``, RMSNorm
    ``query_layernorm``/``key_layernorm`` of head_dim (always built), and in every layer the
    sparse block: ``mlp.gate.wg`` (X x D, no bias), X = ``num_experts`` (1) experts of
    ``intermediate_size``, top ``moe_topk`` (1), plus ``mlp.shared_mlp`` (a SwiGLU MLP of
    ``intermediate_size``, always built); untied by default. ``moe_topk`` may list one value per
    layer (only equal values are supported; entries past the last layer are never read);
    ``moe_intermediate_size``, ``num_shared_expert``, ``use_qk_norm`` and ``use_cla`` are read
    by no module."""
    fields = llama_layout(r)
    attention_bias(r, fields)
    fields["qk_norm"] = "head"
    experts = r.value("moe_experts", "num_experts", "num_local_experts", default=1)
    if isinstance(experts, list):
        r.unsupported("num_experts", "a number of experts per layer")
    top_k = r.value("moe_top_k", "moe_topk", "num_experts_per_tok", default=1)
    layers = fields["n_layers"]
    if isinstance(top_k, list) and is_whole(layers) and len(top_k) < layers:
        r.fail(
            "moe_topk",
            f"lists {len(top_k):,} layers, but the model has {layers:,}: transformers fails to "
            "build it (each layer's gate reads moe_topk[layer_idx], an IndexError)",
        )
    elif isinstance(top_k, list):
        if len(set(map(repr, top_k))) != 1:
            r.unsupported("moe_topk", "a different number of routed experts per layer")
        top_k = top_k[0] if top_k else None
    fields.update(moe_experts=experts, moe_top_k=top_k)
    fields["moe_shared_ffn_hidden"] = fields["ffn_hidden"]
    return fields


def dots1(r: Reader) -> dict[str, Any]:
    """Dots1ForCausalLM (dots.llm1): the shared layout (32 key/value heads by default;
    ``head_dim`` D / H unless given), q/k/v/o bias when ``attention_bias``, RMSNorm ``q_norm``/
    ``k_norm`` of head_dim; after ``first_k_dense_replace`` (0) dense layers the sparse block
    (``mlp.gate`` X x D, its ``e_score_correction_bias`` a buffer; X = ``n_routed_experts``
    experts of ``moe_intermediate_size`` (1,408), top ``num_experts_per_tok``, both required)
    with ``mlp.shared_experts`` (one SwiGLU MLP of ``moe_intermediate_size`` x
    ``n_shared_experts``, required); untied by default. Layers ``layer_types`` marks
    ``sliding_attention`` (default: those from ``max_window_layers`` (62) on) attend within
    ``sliding_window`` (4,096; null: none)."""
    fields = llama_layout(r, kv_heads=32)
    attention_bias(r, fields)
    fields["qk_norm"] = "head"
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_local_experts"),
        ("num_experts_per_tok",),
        (None, None),
        (("moe_intermediate_size",), 1408),
    )
    shared = r.size("moe_shared_ffn_hidden", "n_shared_experts")
    if is_whole(shared, 1) and is_whole(moe["moe_ffn_hidden"]):
        moe["moe_shared_ffn_hidden"] = moe["moe_ffn_hidden"] * shared
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    window = sliding_window(r, default=4096)
    windows = hf_layers.attention_windows(window)
    listed = hf_layers.layer_types(r, n) if window is not None else None
    if listed is not None:
        attention = hf_layers.runs(listed)
    elif window is None:
        r.forget("sliding_window")
        attention = [("full_attention", n)]
    else:
        kinds = ("full_attention", "sliding_attention")
        attention = hf_layers.split_at(r, n, "max_window_layers", 62, *kinds)
    ffn = hf_layers.split_at(r, n, "first_k_dense_replace", 0, "dense", "moe")
    if any(kind not in windows for kind, _ in attention):
        hf_layers.apply(r, fields, attention, windows)  # reports the unknown kind
        return fields
    blocks = hf_layers.merged_blocks(windows, {"dense": {}, "moe": moe})
    hf_layers.apply(r, fields, hf_layers.merge(attention, ffn), blocks, "first_k_dense_replace")
    return fields


def flex_olmo(r: Reader) -> dict[str, Any]:
    """FlexOlmoForCausalLM: OLMo 2's block (norms after attention and after the FFN, RMSNorm
    ``q_norm``/``k_norm`` over H d and K d, q/k/v/o bias when ``attention_bias``) with the
    sparse block in every layer (``mlp.gate`` X x D, no bias; X = ``num_experts`` (7) experts
    of ``intermediate_size``, top 5); untied by default."""
    return _every_layer_sparse(r, olmo2(r), ("num_experts", "num_local_experts"), (7, 5))


FAMILIES = {
    "dots1": dots1,
    "flex_olmo": flex_olmo,
    "glm4_moe": glm4_moe,
    "hunyuan_v1_moe": hunyuan_v1_moe,
    "ernie4_5_moe": ernie4_5_moe,
    "granitemoe": granitemoe,
    "granitemoeshared": granitemoeshared,
    "minimax_m2": minimax_m2,
    "olmoe": olmoe,
    "phimoe": phimoe,
    "qwen2_moe": qwen2_moe,
    "qwen3_moe": qwen3_moe,
    "sarvam_moe": sarvam_moe,
}


PEFT_NAMES = {
    **dict.fromkeys(("dots1", "glm4_moe", "ernie4_5_moe"), DEEPSEEK),
    **dict.fromkeys(("flex_olmo", "olmoe", "qwen3_moe"), QWEN2_MOE),
    "hunyuan_v1_moe": llama_names(
        renames={
            "mlp.router": "mlp.gate.wg",
            **{
                f"mlp.shared_expert.{p}": f"mlp.shared_mlp.{p}"
                for p in ("gate_proj", "up_proj", "down_proj")
            },
        },
        router_linear=True,
        converted=QWEN2_MOE_CONVERTED,
    ),
    "granitemoe": llama_names({"mlp": "block_sparse_moe"}),
    "granitemoeshared": llama_names({"mlp": "block_sparse_moe"}, GRANITE_SHARED_MLP),
    "minimax_m2": llama_names(renames=ROUTER_GATE, converted=MIXTRAL_CONVERTED),
    "phimoe": llama_names(router_linear=True),
    "qwen2_moe": LLAMA,
    "sarvam_moe": DEEPSEEK_NAMES,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
