"""GLM-5.3-Flash's text decoder (transformers 5.24, ``models/glm5_next``, ``Glm5NextTextModel``;
its files usually sit under the ``glm5_next`` wrapper's ``text_config``, the vision parts not
counted): Kimi Delta Attention and multi-head latent attention without positions with a
sparse-attention indexer over pooled keys, hyper-connections over several residual streams,
and a mixture of experts after dense layers.

Per block: ``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm, D); ``attn_hc`` and
``ffn_hc`` (``fn`` (2 + n) n x n D, ``base`` (2 + n) n, ``scale`` 3; n = ``hc_mult``);
``self_attn``: on ``linear_attention`` layers Kimi Delta Attention
(:func:`costcalc.tensors.kimi_delta_tensors`: ``q_proj``, ``k_proj``, ``v_proj`` D -> H d,
``conv1d`` over 3 H d, ``forget_gate`` (``f_a_proj``, ``f_b_proj``, ``dt_bias``, ``A_log``),
``b_proj``, ``g_a_proj``, ``g_b_proj``, ``o_norm``, ``o_proj``); on ``indexed_attention``
layers MLA as DeepSeek-V3.2's with r = 0 (``q_a_proj`` D -> q rank, ``q_a_layernorm``,
``q_b_proj`` q rank -> H n, ``kv_a_proj_with_mqa`` D -> kv rank, ``kv_a_layernorm``,
``kv_b_proj`` kv rank -> H (n + v), ``o_proj`` H v -> D) and, where ``indexer_types`` says
``full``, the indexer (``wq_b`` q rank -> Hi di, ``wk`` D -> di, ``k_norm`` LayerNorm of di,
``weights_proj`` D -> Hi, ``index_kpool_compress_ape`` m x di, ``index_kpool_compress_gate``
di x D; m = ``index_kpool``). ``mlp``: a SwiGLU MLP of ``intermediate_size`` in the dense
layers, else ``gate`` (router X x D; ``e_score_correction_bias`` a buffer), ``experts`` (X
SwiGLU experts of ``moe_intermediate_size``, stacked) and ``shared_experts`` (one SwiGLU MLP of
``moe_intermediate_size`` x ``n_shared_experts``); the SwiGLU clamp (``swiglu_limit``) holds no
parameters. Outside the blocks: ``embed_tokens``, ``norm`` (after the streams' plain mean, a
collapse without parameters), ``lm_head`` (untied by default). The cache keeps the latent (kv
rank per token) and the indexer's keys, gate scores and a flag (2 di + 1 per token).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.deepseek import deepseek_layout, indexer_kinds
from costcalc.formats.families.linear_attention import kimi_delta_block
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import ROUTER_GATE, SHARED_EXPERTS, llama_names
from costcalc.spec import MLA_FIELDS

SIZES: dict[str, Any] = {
    "vocab_size": 154880,
    "d_model": 4096,
    "n_layers": 45,
    "n_heads": 64,
    "context_length": 1048576,
    "ffn_hidden": 12288,
}
"""``Glm5NextTextConfig``'s defaults for the standard sizes (GLM-5.3-Flash)."""

MLA: dict[str, int | None] = {
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 0,
    "qk_nope_head_dim": 256,
    "v_head_dim": 256,
}
"""Its attention sizes: no rotary part."""

MLA_BLOCK_KEYS = ("mixer", "n_heads", "qkv_bias", "attn_out_bias", *MLA_FIELDS)
"""Keys of the latent attention, set on its layers only."""

INDEXED, LINEAR = "indexed_attention", "linear_attention"


def _glm5_next_rules(r: Reader) -> None:
    """Glm5NextTextConfig's head and indexer rules (see :func:`glm5_next_text`)."""
    heads, kv = r.setting("num_attention_heads"), r.setting("num_key_value_heads")
    if is_whole(heads) and is_whole(kv) and heads != kv:
        r.refused_by_class(
            r.spelling("num_key_value_heads"),
            f"{kv:,} key/value heads beside {heads:,} heads: the two must be equal",
        )
    top, pool = r.setting("index_topk"), r.setting("index_kpool")
    if is_whole(pool) and pool < 1:
        r.refused_by_class(r.spelling("index_kpool"), f"{pool:,}: the pools must be positive")
    elif is_whole(top) and is_whole(pool) and top % pool:
        r.refused_by_class(
            r.spelling("index_kpool"), f"pools of {pool:,} do not divide index_topk {top:,}"
        )


def glm5_next_text(r: Reader) -> dict[str, Any]:
    """Glm5NextTextModel with an LM head: the tensors above with ``Glm5NextTextConfig``'s
    defaults (D 4,096, 45 layers, 64 heads, q rank 1,536, kv rank 512, n 256, v 256, r 0; 64
    linear heads of 128, kernel 4; 288 experts of 2,048, top 8, one shared; 4 streams; an
    indexer of 32 heads of 128 over pools of 16). Layers as ``layer_types`` lists them
    (``full_attention`` read as ``indexed_attention``), else latent attention on every 4th;
    dense where ``mlp_layer_types`` says, else the first 3. A rotary part (``qk_rope_head_dim``
    above 0) and a null ``q_lora_rank`` are refused by the class, and so are key/value heads
    other than the heads and an ``index_topk`` that ``index_kpool`` does not divide (its
    ``validate_architecture``, configuration_glm5_next.py, lines 207-217)."""
    _glm5_next_rules(r)
    if "q_lora_rank" in r.data and r.data["q_lora_rank"] is None:
        r.fail("q_lora_rank", "GLM-5.3-Flash's attention always has a query latent")
    if is_whole(r.data.get("qk_rope_head_dim"), 1):
        r.fail("qk_rope_head_dim", "GLM-5.3-Flash's latent attention has no rotary part (0)")
    moe: dict[str, Any] = {}
    fields = deepseek_layout(
        r,
        experts=(288, 8),
        moe_hidden=2048,
        shared=1,
        layers=lambda r, fields, sparse: moe.update(sparse),
        mla=MLA,
        sizes=SIZES,
    )
    mla = {key: fields.pop(key) for key in MLA_BLOCK_KEYS if key in fields}
    fields.update(
        position="none",
        residual_streams=r.value("residual_streams", "hc_mult", default=4),
        stream_collapse="mean",
    )
    indexer = {
        "indexer_heads": r.value("indexer_heads", "index_n_heads", default=32),
        "indexer_head_dim": r.value("indexer_head_dim", "index_head_dim", default=128),
        "indexer_key_pool": r.value("indexer_key_pool", "index_kpool", default=16),
    }
    delta = kimi_delta_block(r, heads=64)
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    mixers = _mixer_layout(r, n)
    ffn = _ffn_runs(r, n)
    kinds = indexer_kinds(r, n)
    if mixers is None or ffn is None or kinds is None:
        return fields
    ffn_blocks = {"dense": {}, "sparse": moe}
    if all(kind == "full" for kind, _ in kinds):
        blocks = {LINEAR: delta, INDEXED: {**mla, **indexer}}
        hf_layers.combine(r, fields, mixers, blocks, ffn, ffn_blocks)
        return fields
    per_layer = _expanded(r, n, mixers)
    if per_layer is None:
        return fields
    blocks = {
        f"{m}+{i}+{f}": {**block, **(indexer if (m, i) == (INDEXED, "full") else {}), **ffn_}
        for m, block in ((LINEAR, delta), (INDEXED, mla))
        for i in ("full", "shared")
        for f, ffn_ in ffn_blocks.items()
    }
    runs = hf_layers.merge(per_layer, hf_layers.merge(kinds, ffn))
    hf_layers.apply(r, fields, runs, blocks, "indexer_types")
    return fields


def _mixer_layout(r: Reader, n: int) -> hf_layers.Layout | None:
    """``layer_types`` (``linear_attention``, ``indexed_attention``; ``full_attention`` read as
    the latter), else latent attention where i % 4 == 3, cycling."""
    listed = hf_layers.layer_types(r, n)
    if listed is None:
        return hf_layers.every_nth(4, INDEXED, LINEAR)
    kinds = [INDEXED if kind == "full_attention" else kind for kind in listed]
    if set(kinds) - {INDEXED, LINEAR}:
        r.fail("layer_types", f"expected {LINEAR}, {INDEXED} or full_attention per layer")
        return None
    return hf_layers.Layout(hf_layers.runs(kinds))


def _ffn_runs(r: Reader, n: int) -> list[tuple[str, int]] | None:
    """``mlp_layer_types`` (``dense``, ``sparse``), else the first 3 layers dense."""
    listed = hf_layers.layer_types(r, n, "mlp_layer_types")
    if listed is None:
        return [("dense", min(3, n)), ("sparse", n - min(3, n))]
    if set(listed) - {"dense", "sparse"}:
        r.fail("mlp_layer_types", "expected dense or sparse per layer")
        return None
    return hf_layers.runs(listed)


def _expanded(r: Reader, n: int, layout: hf_layers.Layout) -> list[tuple[str, int]] | None:
    """The mixers' runs over all n layers (a cycling rule evaluated layer by layer)."""
    if not layout.cycles:
        return list(layout.runs)
    if hf_layers.by_rule(r, n, "layer_types") is None:
        return None
    period = sum(count for _, count in layout.runs)
    return hf_layers.cut(list(layout.runs) * -(-n // period), 0, n)


FAMILIES = {"glm5_next_text": glm5_next_text}


PEFT_NAMES = {
    "glm5_next_text": llama_names({"linear_attn": "self_attn"}, {**ROUTER_GATE, **SHARED_EXPERTS}),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
