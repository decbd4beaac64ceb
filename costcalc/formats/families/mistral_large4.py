"""Mistral Large 4's text decoder (transformers 5.24, ``models/mistral_large4``,
``MistralLarge4TextModel``; its files usually sit under the ``mistral_large4`` wrapper's
``text_config``, the vision parts not counted): DeepSeek-style multi-head latent attention
without a query latent, a sparse-attention indexer reading the block input, layers without
rotary positions, and a mixture of experts after dense layers.

Per block: ``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm, D); ``self_attn``:
``q_proj`` (D -> H (n + r)), ``kv_a_proj_with_mqa`` (D -> kv rank + r, bias when
``attention_bias``), ``kv_a_layernorm`` (kv rank), ``kv_b_proj`` (kv rank -> H (n + v)),
``o_proj`` (H v -> D, bias when ``attention_bias``), ``softmax_scaling`` (``scale`` and
``bias``, H each: the queries times scale log(position + 1) + bias); where ``indexer_types``
says ``full``, ``indexer``: ``q_input_norm`` (LayerNorm of D, weight and bias), ``wq_b`` (D ->
Hi di), ``wk`` (D -> di), ``k_norm`` (LayerNorm of di, weight and bias), ``weights_proj`` (D ->
Hi), ``softmax_scaling`` (Hi each). n, r, v = ``qk_nope_head_dim``, ``qk_rope_head_dim``,
``v_head_dim``; a layer without positions (``no_rope_layers`` 0, default every
``no_rope_layer_interval``-th, 4) has r = 0 and n + r dimensions without positions. ``mlp``: a
SwiGLU MLP of ``intermediate_size`` in the dense layers (``mlp_layer_types``, default the first
``first_k_dense_replace``), else ``gate`` (router X x D), ``experts`` (X SwiGLU experts of
``moe_intermediate_size``, stacked) and ``shared_experts`` (one SwiGLU MLP of
``moe_intermediate_size`` x ``n_shared_experts``). Outside the blocks: ``embed_tokens``,
``rotary_emb.alpha`` (a learned scale per rotary frequency, r / 2), ``norm``, ``lm_head``
(untied by default). The cache keeps the latent and the indexer's key: kv rank + r + di per
token and layer (no di in a ``shared`` indexer layer).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.deepseek import MLA_DEFAULTS, deepseek_layout, indexer_kinds
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import DEEPSEEK_NAMES

SIZES: dict[str, Any] = {
    "vocab_size": 204800,
    "d_model": 6144,
    "n_layers": 72,
    "n_heads": 64,
    "context_length": 1048576,
    "ffn_hidden": 24576,
}
"""``MistralLarge4TextConfig``'s defaults for the standard sizes."""

MLA: dict[str, int | None] = {
    **MLA_DEFAULTS,
    "q_lora_rank": None,
    "qk_nope_head_dim": 64,
}
"""Its attention sizes: no query latent, kv rank 512, r 64, n 64, v 128."""


def mistral_large4_text(r: Reader) -> dict[str, Any]:
    """MistralLarge4TextModel with an LM head: the tensors above with
    ``MistralLarge4TextConfig``'s defaults (D 6,144, 72 layers, 64 heads, 128 experts of 6,144,
    top 4, one shared, one dense layer, an indexer of 32 heads of 128 in every layer, every 4th
    layer without positions). The class has no ``q_lora_rank`` (a file's is read by no module);
    layers that read an earlier layer's cache (``kv_source_layers``) are not supported."""
    moe: dict[str, Any] = {}
    fields = deepseek_layout(
        r,
        experts=(128, 4),
        moe_hidden=6144,
        shared=1,
        layers=lambda r, fields, sparse: moe.update(sparse),
        mla=MLA,
        sizes=SIZES,
    )
    _shared_caches(r, fields["n_layers"])
    fields.update(q_lora_rank=None, rotary_scale=True, query_position_scale=True)
    indexer = {
        "indexer_heads": r.value("indexer_heads", "index_n_heads", default=32),
        "indexer_head_dim": r.value("indexer_head_dim", "index_head_dim", default=128),
        "indexer_query_norm": True,
    }
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    kinds = indexer_kinds(r, n)
    ffn = _ffn_runs(r, n)
    rope = _rope_layout(r, n, fields)
    if kinds is None or ffn is None or rope is None:
        return fields
    blocks = hf_layers.merged_blocks({"full": indexer, "shared": {}}, {"dense": {}, "sparse": moe})
    rest = hf_layers.merge(kinds, ffn)
    unknown = sorted({kind for kind, _ in rest if kind not in blocks})
    if unknown:
        hf_layers.apply(r, fields, rest, blocks, "indexer_types")  # reports the unknown kind
        return fields
    n_, r_ = fields["qk_nope_head_dim"], fields["qk_rope_head_dim"]
    nope = {"qk_rope_head_dim": 0, "qk_nope_head_dim": n_ + r_} if _whole(n_, r_) else {}
    hf_layers.combine(r, fields, rope, {"rope": {}, "nope": nope}, rest, blocks)
    return fields


def _whole(*values: Any) -> bool:
    return all(is_whole(v, 0) for v in values)


def _ffn_runs(r: Reader, n: int) -> list[tuple[str, int]] | None:
    """Dense and sparse layers: as ``mlp_layer_types`` lists them, else the first
    ``first_k_dense_replace`` (1) dense."""
    listed = hf_layers.layer_types(r, n, "mlp_layer_types")
    if listed is not None:
        if set(listed) - {"dense", "sparse"}:
            r.fail("mlp_layer_types", "expected dense or sparse per layer")
            return None
        return hf_layers.runs(listed)
    return hf_layers.split_at(r, n, "first_k_dense_replace", 1, "dense", "sparse")


def _rope_layout(r: Reader, n: int, fields: dict[str, Any]) -> hf_layers.Layout | None:
    """Layers with and without rotary positions: ``no_rope_layers`` (1: rotary, 0: none, at
    least one per layer), else every ``no_rope_layer_interval``-th (4) without, cycling."""
    listed = r.data.get("no_rope_layers")
    if listed is None:
        return hf_layers.every_nth(r.count("no_rope_layer_interval", 4), "nope", "rope")
    if not isinstance(listed, list) or any(flag not in (0, 1) for flag in listed):
        r.fail("no_rope_layers", "expected a list of 1 (rotary) or 0 (none) per layer")
        return None
    if len(listed) < n:
        r.fail("no_rope_layers", f"lists {len(listed):,} layers, but the model has {n:,}")
        return None
    r.key_names["layers"] = r.name("no_rope_layers")
    return hf_layers.Layout(hf_layers.runs(["rope" if flag else "nope" for flag in listed[:n]]))


def _shared_caches(r: Reader, n_layers: Any) -> None:
    """``kv_source_layers``: every layer its own source (the default) is read; a layer reading
    an earlier layer's latent cache is not supported."""
    listed = r.data.get("kv_source_layers")
    if listed is None:
        return
    if not isinstance(listed, list) or not all(is_whole(i, 0) for i in listed):
        r.fail("kv_source_layers", "expected a list of layer indices")
    elif any(source != i for i, source in enumerate(listed)):
        r.unsupported("kv_source_layers", "layers reading an earlier layer's latent cache")
    elif hf_layers.count_of(n_layers) not in (None, len(listed)):
        r.fail("kv_source_layers", f"lists {len(listed):,} layers, but the model has {n_layers:,}")


FAMILIES = {"mistral_large4_text": mistral_large4_text}


PEFT_NAMES = {
    "mistral_large4_text": DEEPSEEK_NAMES,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
